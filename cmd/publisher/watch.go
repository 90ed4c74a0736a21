package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/lionbus/lionbus/cmd/internal/render"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// watchLong and branchListLong describe watch and branch list in their help.
const (
	branchListLong = "Lists the branches that have history, with their number of history events."
	watchLong      = `Follows the signal events of a branch (run start and end, messages added,
tool hooks, LNDL rounds) as they happen, one line each, until Ctrl-C. With
--all it starts from the oldest event the events stream keeps, with --since
from that long ago; --json prints each event as received.`
)

// watch is `publisher watch BRANCH`.
func (a *app) watch(fs *flag.FlagSet) func([]string) int {
	all := fs.Bool("all", false, "start with the oldest event kept")
	since := fs.Duration("since", 0, "start with the events of this last period, e.g. 10m")
	return func(positional []string) int {
		return runWatch(a.ctx, a.o, *all, *since, positional, a.stdout, a.stderr)
	}
}

// runWatch follows the events of the branch of positional.
func runWatch(ctx context.Context, o *options, all bool, since time.Duration, positional []string, stdout, stderr io.Writer) int {
	switch {
	case len(positional) != 1:
		return usageError(stderr, errors.New("watch needs exactly one argument: the branch id"))
	case !protocol.ValidToken(positional[0]):
		return usageError(stderr, fmt.Errorf("branch id %q: want 1 to %d characters of [A-Za-z0-9_-]", positional[0], protocol.MaxTokenLength))
	case all && since != 0:
		return usageError(stderr, errors.New("--all and --since exclude each other"))
	case since < 0:
		return usageError(stderr, fmt.Errorf("--since must be positive, got %s", since))
	}
	// --timeout bounds connecting only: watching lasts until ctx ends.
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	cl, nc, code := connect(cctx, o, stderr)
	cancel()
	if cl == nil {
		return code
	}
	defer nc.Close()
	opts := client.WatchOptions{All: all}
	if since > 0 {
		opts.Since = time.Now().Add(-since)
	}
	err := cl.Watch(ctx, positional[0], opts, func(ev *event.Event) error {
		if o.JSON {
			b, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdout, string(b))
			return err
		}
		_, err := fmt.Fprintln(stdout, eventLine(ev))
		return err
	})
	if err != nil {
		fmt.Fprintf(stderr, "publisher: watch %s: %v\n", positional[0], err)
		return exitNoAnswer
	}
	return exitOK
}

// eventLine is one signal event as a line: time, type, request, and what
// its data says in short.
func eventLine(ev *event.Event) string {
	var d map[string]any
	_ = json.Unmarshal(ev.Data(), &d)
	typ := strings.TrimPrefix(ev.Type(), "lionbus.")
	req, _ := d["request_id"].(string)
	var detail string
	switch {
	case d["message"] != nil:
		if m, ok := d["message"].(map[string]any); ok {
			kind, _ := m["kind"].(string)
			detail = kind + " " + render.Clip(render.Text(m["content"]), 100)
		}
	case d["tool"] != nil:
		if t, ok := d["tool"].(map[string]any); ok {
			fn, _ := t["function"].(string)
			detail = fn
			if r, ok := t["result_summary"].(string); ok && r != "" {
				detail += " → " + render.Clip(r, 80)
			}
		}
	case d["error"] != nil:
		detail = "error " + render.Clip(render.Text(d["error"]), 100)
	}
	line := fmt.Sprintf("%s  %-22s %s", ev.Time().UTC().Format("15:04:05.000"), typ, req)
	if detail != "" {
		line += "  " + detail
	}
	return line
}

// branchList is `publisher branch list`.
func (a *app) branchList(*flag.FlagSet) func([]string) int {
	return func(positional []string) int {
		return runBranchList(a.ctx, a.o, positional, a.stdout, a.stderr)
	}
}

// runBranchList lists the branches.
func runBranchList(ctx context.Context, o *options, positional []string, stdout, stderr io.Writer) int {
	if len(positional) != 0 {
		return usageError(stderr, fmt.Errorf("branch list takes no arguments, got %q", positional))
	}
	return withClient(ctx, o, stderr, func(ctx context.Context, cl *client.Client) int {
		list, err := cl.Branches(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "publisher: branch list: %v\n", err)
			return exitNoAnswer
		}
		if o.JSON {
			if list == nil {
				list = []client.BranchInfo{}
			}
			b, _ := json.MarshalIndent(list, "", "  ")
			fmt.Fprintln(stdout, string(b))
			return exitOK
		}
		if len(list) == 0 {
			fmt.Fprintln(stdout, "no branches")
			return exitOK
		}
		for _, b := range list {
			fmt.Fprintf(stdout, "%-40s %d events\n", b.ID, b.Events)
		}
		return exitOK
	})
}
