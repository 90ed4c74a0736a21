package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// maxDataBytes bounds what --data, --response-format and friends read from
// a file or standard input. The worker's own limit (default 1 MiB) is the
// real bound of a request.
const maxDataBytes = 64 << 20

// request is what a command sends.
type request struct {
	verb   string
	branch string
	data   map[string]any
}

// set writes v, the request type of the verb (package wire) filled from
// the flags, into the request's data: the fields the flags gave (the
// others are left out of v's JSON) replace what --data holds, and the
// keys of --data that v does not set stay. unset names the fields v's
// JSON always has (required ones) that the flags did not give.
func (r *request) set(v any, unset ...string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	for _, k := range unset {
		delete(m, k)
	}
	for k, x := range m {
		r.data[k] = x
	}
	return nil
}

// command is one publisher command: its flags, and how it turns them and
// its arguments into a request.
type command struct {
	name    string // "branch create", "communicate", ...
	args    string // synopsis of the arguments after the flags
	summary string
	// define declares the command's own flags on fs and returns a function
	// that, after parsing, fills in req from them and the arguments.
	define func(fs *flag.FlagSet) func(req *request, args []string) error
}

// commands lists every command that sends a request, in help order.
var commands = []command{
	{
		name: "branch create", summary: "start a branch (verb branch.create)",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			id := fs.String("id", "", "id of the new branch (default: --branch, else a new UUID)")
			system := fs.String("system", "", "system message")
			chat := fs.String("chat-model", "", `chat model: "provider:model" or a JSON object {"provider": ...}`)
			parse := fs.String("parse-model", "", "parse model (default: the chat model)")
			var tools stringList
			fs.Var(&tools, "tool", "a registered tool the branch may use (repeatable)")
			return func(req *request, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				req.verb = "branch.create"
				if *id == "" {
					*id = req.branch
				}
				req.branch = ""
				d := wire.BranchCreateRequest{BranchID: *id, System: *system, Tools: tools}
				var err error
				if d.ChatModel, err = modelFlag("chat-model", *chat); err != nil {
					return err
				}
				if d.ParseModel, err = modelFlag("parse-model", *parse); err != nil {
					return err
				}
				return req.set(d)
			}
		},
	},
	{
		name: "branch get", args: "[BRANCH]", summary: "show a branch: settings and messages (now, or as it was at --at-seq or --at-time)",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			at := definePastFlags(fs, "show the branch as it was at this history sequence (the fold of its events up to it)")
			return func(req *request, args []string) error {
				if err := branchArg(req, args); err != nil {
					return err
				}
				req.verb = "branch.get"
				seq, tm, err := at()
				if err != nil {
					return err
				}
				return req.set(wire.BranchGetRequest{AtSeq: seq, AtTime: tm})
			}
		},
	},
	{
		name: "branch history", args: "[BRANCH]", summary: "list a page of a branch's history events",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			after := fs.Int("after", 0, "list events after this sequence")
			limit := fs.Int("limit", 0, "at most this many events (default 100, at most 1000)")
			at := definePastFlags(fs, "list no event after this history sequence")
			return func(req *request, args []string) error {
				if err := branchArg(req, args); err != nil {
					return err
				}
				req.verb = "branch.history"
				if *after < 0 || *limit < 0 {
					return errors.New("--after and --limit must not be negative")
				}
				seq, tm, err := at()
				if err != nil {
					return err
				}
				return req.set(wire.BranchHistoryRequest{After: uint64(*after), Limit: *limit, AtSeq: seq, AtTime: tm})
			}
		},
	},
	{
		name: "branch clone", args: "[BRANCH]", summary: "copy a branch into a new one",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			id := fs.String("id", "", "id of the copy (default a new UUID)")
			return func(req *request, args []string) error {
				if err := branchArg(req, args); err != nil {
					return err
				}
				req.verb = "branch.clone"
				return req.set(wire.BranchCloneRequest{BranchID: *id})
			}
		},
	},
	{
		name: "branch fork", args: "[BRANCH]", summary: "make a fork of a branch at its head, --at-seq or --before-message, sharing its prefix",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			id := fs.String("id", "", "id of the fork (default a new UUID)")
			seq := fs.Uint64("at-seq", 0, "fork at this history sequence of the branch (default its head)")
			before := fs.String("before-message", "", "fork just before the exchange this message (an instruction's id) opens; excludes --at-seq")
			return func(req *request, args []string) error {
				if err := branchArg(req, args); err != nil {
					return err
				}
				if *seq != 0 && *before != "" {
					return errors.New("--at-seq and --before-message exclude each other")
				}
				req.verb = "branch.fork"
				return req.set(wire.BranchForkRequest{BranchID: *id, AtSeq: *seq, BeforeMessage: *before})
			}
		},
	},
	{
		name: "branch forks", args: "[BRANCH]", summary: "list the forks made of a branch (a page of its history at a time)",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			after := fs.Uint64("after", 0, "scan the history after this sequence")
			limit := fs.Int("limit", 0, "scan at most this many events (default and at most 1000)")
			return func(req *request, args []string) error {
				if err := branchArg(req, args); err != nil {
					return err
				}
				if *limit < 0 {
					return errors.New("--limit must not be negative")
				}
				req.verb = "branch.forks"
				return req.set(wire.BranchForksRequest{After: *after, Limit: *limit})
			}
		},
	},
	branchVerb("clear", "remove every message but the system message"),
	branchVerb("delete", "remove a branch, its history and snapshot"),
	{
		name: "communicate", args: "[BRANCH]", summary: "send an instruction, record the exchange, print the answer",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			ex := defineExchangeFlags(fs, "parse model override")
			skip := fs.Bool("skip-validation", false, "return the answer's text without parsing")
			clear := fs.Bool("clear-messages", false, "clear the branch's messages, atomically with this exchange")
			return func(req *request, args []string) error {
				if err := branchArg(req, args); err != nil {
					return err
				}
				req.verb = "communicate"
				var d wire.CommunicateRequest
				if err := ex.apply(&d.ChatRequest); err != nil {
					return err
				}
				d.SkipValidation, d.ClearMessages = *skip, *clear
				if err := req.set(d); err != nil {
					return err
				}
				if _, ok := req.data["instruction"]; !ok {
					if _, ok := req.data["plain_content"]; !ok {
						return errors.New("communicate needs --instruction (or an instruction in --data)")
					}
				}
				return nil
			}
		},
	},
	parseCommand(),
	actCommand,
	operateCommand(),
	interpretCommand(),
	reactCommand(),
	runCommand(),
	{
		name: "send", args: "VERB", summary: "send any verb (chat, op.NAME, ...) with --data and --branch",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			return func(req *request, args []string) error {
				if len(args) != 1 {
					return errors.New("send needs exactly one argument: the verb")
				}
				for _, tok := range strings.Split(args[0], ".") {
					if !protocol.ValidToken(tok) {
						return fmt.Errorf("verb %q: want dot-separated names of [A-Za-z0-9_-] (e.g. chat, op.summarize)", args[0])
					}
				}
				req.verb = args[0]
				return nil
			}
		},
	},
}

// branchVerb is a command that only names a branch.
func branchVerb(name, summary string) command {
	return command{
		name: "branch " + name, args: "[BRANCH]", summary: summary,
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			return func(req *request, args []string) error {
				if err := branchArg(req, args); err != nil {
					return err
				}
				req.verb = "branch." + name
				return nil
			}
		},
	}
}

// definePastFlags declares --at-seq and --at-time on fs; the function it
// returns gives their values once parsed (0 and nil when not given).
func definePastFlags(fs *flag.FlagSet, seqUsage string) func() (uint64, *time.Time, error) {
	seq := fs.Uint64("at-seq", 0, seqUsage)
	at := fs.String("at-time", "", "as it was at this time (RFC 3339, e.g. 2026-01-02T15:04:05Z); excludes --at-seq")
	return func() (uint64, *time.Time, error) {
		if *at == "" {
			return *seq, nil, nil
		}
		if *seq != 0 {
			return 0, nil, errors.New("--at-seq and --at-time exclude each other")
		}
		t, err := time.Parse(time.RFC3339Nano, *at)
		if err != nil {
			return 0, nil, fmt.Errorf("--at-time %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", *at)
		}
		return 0, &t, nil
	}
}

// branchArg takes the branch from the one optional argument or --branch,
// and requires it.
func branchArg(req *request, args []string) error {
	switch {
	case len(args) > 1:
		return fmt.Errorf("unexpected argument %q", args[1])
	case len(args) == 1 && req.branch != "" && req.branch != args[0]:
		return fmt.Errorf("branch given twice: --branch %q and %q", req.branch, args[0])
	case len(args) == 1:
		req.branch = args[0]
	}
	if req.branch == "" {
		return errors.New("which branch? give --branch ID or the id as an argument")
	}
	return nil
}

func noArgs(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q", args[0])
	}
	return nil
}

// modelFlag reads the model reference flag --name: a JSON object when it
// starts with "{", else the string form "provider:model"; nil when v is "".
func modelFlag(name, v string) (*wire.ModelRef, error) {
	if v == "" {
		return nil, nil
	}
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		var m wire.ModelRef
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			return nil, fmt.Errorf("--%s: not a JSON object naming a provider: %w", name, err)
		}
		return &m, nil
	}
	if p, m, ok := strings.Cut(v, ":"); !ok || p == "" || m == "" {
		return nil, fmt.Errorf("--%s %q: want provider:model (e.g. scripted:echo) or a JSON object", name, v)
	}
	m, err := wire.ParseModelRef(v)
	return &m, err
}

// jsonOrText returns s decoded when it is a JSON object or array, else s.
func jsonOrText(s string) any {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		var v any
		if json.Unmarshal([]byte(t), &v) == nil {
			return v
		}
	}
	return s
}

// readJSONArg reads a JSON value given inline (starting with "{" or "[")
// or as a file name.
func readJSONArg(flagName, v string) (any, error) {
	raw := []byte(v)
	if t := strings.TrimSpace(v); !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[") {
		b, err := readLimited(v, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
		raw = b
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s: invalid JSON: %w", flagName, err)
	}
	return out, nil
}

// readData reads --data: a JSON object from a file or, for "-", stdin.
func readData(path string, stdin io.Reader) (map[string]any, error) {
	b, err := readLimited(path, stdin)
	if err != nil {
		return nil, fmt.Errorf("--data: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil || v == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, fmt.Errorf("--data: want a JSON object: %w", err)
	}
	if dec.More() {
		return nil, errors.New("--data: trailing data after the JSON object")
	}
	return v, nil
}

// readLimited reads a file, or stdin for "-", up to maxDataBytes.
func readLimited(path string, stdin io.Reader) ([]byte, error) {
	var r io.Reader
	if path == "-" {
		if stdin == nil {
			return nil, errors.New("standard input is not available here")
		}
		r = stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxDataBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxDataBytes {
		return nil, fmt.Errorf("more than %d bytes", maxDataBytes)
	}
	return b, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// exchangeFlags are the flags of the verbs that send an instruction to a
// model (communicate, operate): the instruction, its guidance and context,
// the response format and the model overrides.
type exchangeFlags struct {
	instruction, guidance, context, format, chat, parse *string
}

// defineExchangeFlags defines the exchange flags on fs; parseHelp is the
// help of --parse-model, whose default differs between verbs.
func defineExchangeFlags(fs *flag.FlagSet, parseHelp string) exchangeFlags {
	return exchangeFlags{
		instruction: fs.String("instruction", "", "the task (required unless --data has it)"),
		guidance:    fs.String("guidance", "", "how to go about the task"),
		context:     fs.String("context", "", "extra material: text, or JSON"),
		format:      fs.String("response-format", "", "JSON Schema the answer must satisfy: a file, or inline JSON"),
		chat:        fs.String("chat-model", "", `chat model override: "provider:model" or a JSON object`),
		parse:       fs.String("parse-model", "", parseHelp),
	}
}

// apply writes the exchange flags that were given into d.
func (f exchangeFlags) apply(d *wire.ChatRequest) error {
	if *f.instruction != "" {
		d.Instruction = *f.instruction
	}
	if *f.guidance != "" {
		d.Guidance = *f.guidance
	}
	if *f.context != "" {
		d.Context = jsonOrText(*f.context)
	}
	if *f.format != "" {
		v, err := readJSONArg("--response-format", *f.format)
		if err != nil {
			return err
		}
		if d.ResponseFormat, err = json.Marshal(v); err != nil {
			return err
		}
	}
	var err error
	if d.ChatModel, err = modelFlag("chat-model", *f.chat); err != nil {
		return err
	}
	d.ParseModel, err = modelFlag("parse-model", *f.parse)
	return err
}
