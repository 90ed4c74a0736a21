package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/wire"
)

// toolsLong describes the tools commands in their help.
const toolsLong = `The tool registry (KV bucket <prefix>_tools) and its tools:

  tools list                      the registered tools: name, version, subject, description
  tools show NAME                 one tool's registry entry, with its parameters schema
  tools call NAME --args JSON     invoke a tool directly (lionbus.tool.invoke on its subject);
                                  --args is a JSON object, a file, or - for standard input

With --json, list and show print the entries as JSON, and call prints the
whole result ({"output": ...} or {"error": {...}}). call exits 1 when the
tool answers an error, 3 when no service answers in time.`

// toolsCmd is `publisher tools list|show|call`.
func (a *app) toolsCmd(sub string) func(fs *flag.FlagSet) func([]string) int {
	return func(fs *flag.FlagSet) func([]string) int {
		callArgs, key := new(string), new(string)
		if sub == "call" {
			callArgs = fs.String("args", "{}", "the arguments, a JSON object, a file, or - for standard input")
			key = fs.String("key", "", "the idempotency key (default: a new one; the same key answers the first result again)")
		}
		return func(args []string) int {
			return runTools(a.ctx, a.o, sub, *callArgs, *key, args, a.stdin, a.stdout, a.stderr)
		}
	}
}

// runTools runs tools subcommand sub with its arguments positional.
func runTools(ctx context.Context, o *options, sub, callArgs, key string, positional []string, stdin io.Reader, stdout, stderr io.Writer) int {
	want := map[string]int{"list": 0, "show": 1, "call": 1}
	n := want[sub]
	switch {
	case len(positional) != n:
		return usageError(stderr, fmt.Errorf("tools %s takes %d argument(s), got %d", sub, n, len(positional)))
	case n == 1 && !protocol.ValidToken(positional[0]):
		return usageError(stderr, fmt.Errorf("tool name %q: want 1 to %d characters of [A-Za-z0-9_-]", positional[0], protocol.MaxTokenLength))
	}
	var err error
	var arguments map[string]any
	if sub == "call" {
		if arguments, err = readArgs(callArgs, stdin); err != nil {
			return usageError(stderr, err)
		}
	}

	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	_, nc, code := connect(ctx, o, stderr)
	if nc == nil {
		return code
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintf(stderr, "publisher: %v\n", err)
		return exitNoAnswer
	}
	reg, err := tools.OpenRegistry(ctx, js, o.Prefix, zerolog.Nop())
	if err != nil {
		fmt.Fprintf(stderr, "publisher: tool registry: %v\n", err)
		return exitNoAnswer
	}
	defer func() { _ = reg.Close() }()

	switch sub {
	case "list":
		return printToolList(o, reg.List(), stdout)
	case "show":
		e, err := reg.Lookup(ctx, positional[0])
		if err != nil {
			fmt.Fprintf(stderr, "publisher: %v\n", err)
			return exitFailed
		}
		out, _ := json.MarshalIndent(e, "", "  ")
		fmt.Fprintf(stdout, "%s\n", out)
		return exitOK
	}
	inv, err := tools.NewInvoker(nc, tools.InvokerConfig{Registry: reg, Prefix: o.Prefix, Timeout: o.Timeout, Source: "/lionbus/publisher"})
	if err != nil {
		return usageError(stderr, err)
	}
	if key == "" {
		key = "publisher-" + uuid.NewString()
	}
	t0 := time.Now()
	out, err := inv.Invoke(ctx, wire.ToolInvocation{Function: positional[0], Arguments: arguments, IdempotencyKey: key, RequestID: key})
	if err != nil {
		fmt.Fprintf(stderr, "publisher: tools call %s: %v\n", positional[0], err)
		if errors.Is(err, wire.ErrNoTool) {
			return exitFailed
		}
		return exitNoAnswer
	}
	if o.JSON {
		b, _ := json.Marshal(out)
		fmt.Fprintf(stdout, "%s\n", b)
	} else if out.Error == nil {
		b, _ := json.Marshal(out.Output)
		fmt.Fprintf(stdout, "%s\n", b)
	}
	if out.Error != nil {
		fmt.Fprintf(stderr, "publisher: tool %s answered error %s: %s (%s)\n", positional[0], out.Error.Code, out.Error.Message, time.Since(t0).Round(time.Millisecond))
		return exitFailed
	}
	return exitOK
}

// printToolList prints the registry entries as a table, or as JSON.
func printToolList(o *options, entries []tools.Entry, stdout io.Writer) int {
	if o.JSON {
		b, _ := json.Marshal(entries)
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	if len(entries) == 0 {
		fmt.Fprintln(stdout, "no tools registered")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tSUBJECT\tDESCRIPTION")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, e.Version, e.Subject, wire.Truncate(strings.ReplaceAll(e.Description, "\n", " "), 60))
	}
	_ = tw.Flush()
	return exitOK
}

// readArgs reads --args: inline JSON, a file, or "-" for standard input;
// it must be a JSON object.
func readArgs(v string, stdin io.Reader) (map[string]any, error) {
	raw := []byte(v)
	if !json.Valid(raw) {
		var err error
		if v == "-" {
			raw, err = io.ReadAll(io.LimitReader(stdin, maxDataBytes))
		} else {
			raw, err = os.ReadFile(v)
		}
		if err != nil {
			return nil, fmt.Errorf("--args: %w", err)
		}
	}
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil || args == nil {
		return nil, fmt.Errorf("--args must be a JSON object: %v", err)
	}
	return args, nil
}
