// Command publisher sends lionbus requests from the command line and prints
// their answers: branch administration, communicate, parse, act, any other verb
// with raw data, stored results, and the LNDL tools (publisher lndl --help).
//
// The main function is thin: run parses the command line (a cobra command
// tree, see cli.go), sends one request through the Go client of pkg/bus
// and returns the exit code (see the help). Run `publisher --help` for the
// commands and flags, `publisher context --help` for saved connection
// settings.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
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

// rootLong is the description of the publisher in its help.
const rootLong = `Sends one request to lionbus workers over NATS and prints the answer.

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
LIONBUS_PREFIX, ...); a flag wins over the environment, which wins over the
saved connection settings (publisher context --help). A misspelled LIONBUS_*
variable is reported.`

// rootExamples are the examples of the publisher's help.
const rootExamples = `  publisher branch create --id b1 --system "Be brief." --chat-model scripted:echo
  publisher communicate --branch b1 --instruction "Say hi"
  publisher communicate --branch b1 --instruction "Describe Lyon" --response-format city.json --json
  publisher parse b1 --text 'It is {"city": "Lyon"}' --response-format city.json
  publisher act b1 --call add='{"x": 2, "y": 3}' --call now --strategy sequential
  publisher operate b1 --instruction "Add 2 and 3" --actions --response-format answer.json
  publisher interpret b1 --text "cheap flights paris next month??" --domain travel
  publisher react b1 --instruction "What is 17 * 23?" --max-extensions 2 --return-analysis
  publisher run --branch b1 "Fix the failing test"   # chunks as they arrive; Ctrl-C cancels the run
  publisher branch history b1
  publisher branch list -o json
  publisher watch b1
  publisher --no-wait communicate --branch b1 --instruction "later"   # prints the request id
  publisher result 0d7c3a4e-...
  publisher send chat --branch b1 --data - < request.json
  source <(publisher completion bash)`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command: it parses args, runs the command (most send
// one request and print the answer) and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	warnEnv(environ(), stderr)
	o := newOptions()
	global := flag.NewFlagSet("publisher", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	addGlobalFlags(global, o)
	a := &app{ctx: ctx, o: o, global: global, stdin: stdin, stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv}
	root := a.newRoot()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "publisher: %v\n", err)
		return exitUsage
	}
	return a.code
}

// usageError prints err as a usage error, on one line, and returns
// exitUsage.
func usageError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "publisher: %v; see 'publisher --help'\n", err)
	return exitUsage
}
