// Command publisher sends lionbus requests from the command line and prints
// their answers: branch administration, communicate, parse, act, any other verb
// with raw data, stored results, and the LNDL tools (publisher lndl --help).
//
// The main function is thin: run parses the command line, sends one
// request through the Go client of pkg/bus and returns the exit code (see
// the usage text). Run `publisher --help` for the commands and flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit codes.
const (
	exitOK       = 0 // the request succeeded
	exitFailed   = 1 // the request failed: the answer is an error event
	exitUsage    = 2 // bad command line or data
	exitNoAnswer = 3 // could not connect, send, or get the answer in time
	exitNoResult = 4 // result ID: no answer is stored for the request
)

const usageText = `Usage: publisher [flags] COMMAND [flags] [args]

Sends one request to lionbus workers over NATS and prints the answer.

Commands:
%s  result ID                  print the stored answer of request ID (--wait to wait for it)
  cancel ID                  ask the workers to cancel request ID (it is answered "canceled")
  branch list                the branches that have history
  watch BRANCH               follow a branch's events live (publisher watch --help)
  dlq list|show|retry|delete dead letters: requests that failed on every delivery
                             or could not be answered (publisher dlq --help)
  tools list|show|call       the tool registry; call a tool directly (publisher tools --help)
  lndl ...                   LNDL tools (publisher lndl --help)

Exit codes:
  0  the request succeeded
  1  the request failed: the worker answered with an error event (its code
     and message are printed on stderr, e.g. "branch_not_found: ...")
  2  usage error: bad flags, arguments or data
  3  could not connect to NATS, send the request, or get the answer
     within --timeout
  4  result ID: no answer is stored for that request (not answered yet,
     unknown, or older than the results stream keeps)

Flags may come before or after the command. Connection flags can also be
set in the environment as LIONBUS_<FLAG> (LIONBUS_NATS, LIONBUS_CREDS,
LIONBUS_PREFIX, ...); a flag wins over the environment.

Examples:
  publisher branch create --id b1 --system "Be brief." --chat-model scripted:echo
  publisher communicate --branch b1 --instruction "Say hi"
  publisher communicate --branch b1 --instruction "Describe Lyon" --response-format city.json --json
  publisher parse b1 --text 'It is {"city": "Lyon"}' --response-format city.json
  publisher act b1 --call add='{"x": 2, "y": 3}' --call now --strategy sequential
  publisher operate b1 --instruction "Add 2 and 3" --actions --response-format answer.json
  publisher run --branch b1 "Fix the failing test"   # chunks as they arrive; Ctrl-C cancels the run
  publisher branch history b1
  publisher --no-wait communicate --branch b1 --instruction "later"   # prints the request id
  publisher result 0d7c3a4e-...
  publisher send chat --branch b1 --data - < request.json

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command: it parses args, sends the request and prints
// the answer, and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := newOptions()
	global := flag.NewFlagSet("publisher", flag.ContinueOnError)
	global.SetOutput(stderr)
	addGlobalFlags(global, o)
	global.Usage = func() { printUsage(stderr, global) }
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return usageError(stderr, err)
	}
	rest := global.Args()
	if len(rest) == 0 {
		printUsage(stderr, global)
		return exitUsage
	}
	given := map[string]bool{}
	global.Visit(func(f *flag.Flag) { given[f.Name] = true })

	switch rest[0] {
	case "help":
		printUsage(stdout, global)
		return exitOK
	case "result":
		return runResult(ctx, o, given, rest[1:], stdout, stderr)
	case "cancel":
		return runCancel(ctx, o, given, rest[1:], stdout, stderr)
	case "dlq":
		return runDLQ(ctx, o, given, rest[1:], stdout, stderr)
	case "watch":
		return runWatch(ctx, o, given, rest[1:], stdout, stderr)
	case "tools":
		return runTools(ctx, o, given, rest[1:], stdin, stdout, stderr)
	}
	if rest[0] == "lndl" {
		return runLNDL(ctx, rest[1:], stdin, stdout, stderr)
	}

	name, cmdArgs := rest[0], rest[1:]
	if name == "branch" && len(cmdArgs) > 0 && cmdArgs[0] == "list" {
		return runBranchList(ctx, o, given, cmdArgs[1:], stdout, stderr)
	}
	if name == "branch" {
		if len(cmdArgs) == 0 {
			return usageError(stderr, errors.New("branch needs a subcommand: create, get, history, clone, clear, delete or list"))
		}
		name, cmdArgs = "branch "+cmdArgs[0], cmdArgs[1:]
	}
	cmd, ok := findCommand(name)
	if !ok {
		return usageError(stderr, fmt.Errorf("unknown command %q", name))
	}

	fs := flag.NewFlagSet("publisher "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	addGlobalFlags(fs, o)
	apply := cmd.define(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: publisher %s [flags] %s\n\n%s.\n\nFlags:\n", cmd.name, cmd.args, cmd.summary)
		fs.PrintDefaults()
	}
	positional, err := parseInterleaved(fs, cmdArgs)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return usageError(stderr, err)
	}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := globalFromEnv(fs, given, envFlags, os.LookupEnv); err != nil {
		return usageError(stderr, err)
	}
	if err := o.validate(); err != nil {
		return usageError(stderr, err)
	}

	req := &request{branch: o.Branch, data: map[string]any{}}
	if o.Data != "" {
		if req.data, err = readData(o.Data, stdin); err != nil {
			return usageError(stderr, err)
		}
	}
	if err := apply(req, positional); err != nil {
		return usageError(stderr, err)
	}
	return send(ctx, o, req, stdout, stderr)
}

// parseInterleaved parses flags that may come before, between and after
// the positional arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func findCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func printUsage(w io.Writer, fs *flag.FlagSet) {
	var b strings.Builder
	for _, c := range commands {
		syn := c.name
		if c.args != "" {
			syn += " " + c.args
		}
		fmt.Fprintf(&b, "  %-26s %s\n", syn, c.summary)
	}
	fmt.Fprintf(w, usageText, b.String())
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func usageError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "publisher: %v\nRun 'publisher --help' for usage.\n", err)
	return exitUsage
}
