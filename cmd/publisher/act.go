package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lionbus/lionbus/cmd/internal/render"
	"github.com/lionbus/lionbus/pkg/wire"
)

// actCommand is "publisher act": tool calls on a branch (verb act).
var actCommand = command{
	name: "act", args: "[BRANCH]", summary: "run tool calls with the branch's tools, record them, print the responses",
	define: func(fs *flag.FlagSet) func(*request, []string) error {
		var calls stringList
		fs.Var(&calls, "call", `a tool call NAME or NAME=ARGS, ARGS a JSON object, e.g. add='{"x": 1}' (repeatable, in order)`)
		requests := fs.String("requests", "", "action requests: a JSON array of {function, arguments, id}, inline or a file; --call adds after them")
		strategy := fs.String("strategy", "", `"concurrent" (the default) or "sequential"`)
		suppress := fs.Bool("suppress-errors", true, "a failed call becomes an error value; --suppress-errors=false fails the request instead")
		return func(req *request, args []string) error {
			if err := branchArg(req, args); err != nil {
				return err
			}
			req.verb = "act"
			d := wire.ActRequest{Strategy: *strategy}
			var err error
			if d.ActionRequests, err = actionRequests(req.data["action_requests"], *requests, calls); err != nil {
				return err
			}
			if len(d.ActionRequests) == 0 {
				return errors.New("act needs a call: --call NAME[=ARGS], --requests, or action_requests in --data")
			}
			if !*suppress {
				d.SuppressErrors = suppress
			}
			return req.set(d)
		}
	},
}

// actionRequests returns the action requests of act: those of --data (had),
// then --requests, then each --call.
func actionRequests(had any, requests string, calls []string) ([]wire.ActionRequest, error) {
	var list []wire.ActionRequest
	if had != nil {
		if _, ok := had.([]any); !ok {
			return nil, fmt.Errorf("--data: action_requests must be an array, not %T", had)
		}
		if err := roundTrip(had, &list); err != nil {
			return nil, fmt.Errorf("--data: action_requests: want an array of {function, arguments, id}: %w", err)
		}
	}
	if requests != "" {
		v, err := readJSONArg("--requests", requests)
		if err != nil {
			return nil, err
		}
		var more []wire.ActionRequest
		if _, ok := v.([]any); !ok || roundTrip(v, &more) != nil {
			return nil, errors.New("--requests: want a JSON array of {function, arguments}")
		}
		list = append(list, more...)
	}
	for _, c := range calls {
		name, rawArgs, hasArgs := strings.Cut(c, "=")
		if name == "" {
			return nil, fmt.Errorf("--call %q: want NAME or NAME=ARGS", c)
		}
		call := wire.ActionRequest{Function: name}
		if hasArgs {
			if err := json.Unmarshal([]byte(rawArgs), &call.Arguments); err != nil || call.Arguments == nil {
				return nil, fmt.Errorf("--call %s: arguments must be a JSON object, e.g. %s='{\"x\": 1}'", name, name)
			}
		}
		list = append(list, call)
	}
	return list, nil
}

// roundTrip decodes v's JSON into dst, keeping numbers as they are written
// (json.Number in maps), as --data's are read.
func roundTrip(v, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(dst)
}

// renderActions prints act's responses, one line each: the call, then its
// output or its error.
func renderActions(w io.Writer, raw json.RawMessage) bool {
	var responses []wire.ActionResponse
	if err := json.Unmarshal(raw, &responses); err != nil {
		return false
	}
	if len(responses) == 0 {
		fmt.Fprintln(w, "no action responses")
	}
	for _, r := range responses {
		args, _ := json.Marshal(r.Arguments)
		call := r.Function + " " + string(args)
		if r.ID != "" {
			call = r.ID + ": " + call
		}
		if r.Error != nil {
			fmt.Fprintln(w, render.Clip(fmt.Sprintf("%s → error %s: %s", call, r.Error.Code, r.Error.Message), lineWidth))
			continue
		}
		out, _ := json.Marshal(r.Output)
		fmt.Fprintln(w, render.Clip(fmt.Sprintf("%s → %s", call, out), lineWidth))
	}
	return true
}
