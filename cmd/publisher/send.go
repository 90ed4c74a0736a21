package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/cmd/internal/render"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// send connects, submits req and, unless --no-wait, waits for the answer
// and prints it.
func send(ctx context.Context, o *options, req *request, stdout, stderr io.Writer) int {
	return withClient(ctx, o, stderr, func(ctx context.Context, cl *client.Client) int {
		var opts []client.SubmitOption
		if o.ID != "" {
			opts = append(opts, client.WithID(o.ID))
		}
		if o.Binary {
			opts = append(opts, client.WithBinary())
		}
		if o.Parallel {
			opts = append(opts, client.WithParallel())
		}
		if req.verb == "run" && !o.NoWait {
			return sendRun(ctx, cl, o, req, opts, stdout, stderr)
		}
		if stream, _ := req.data["stream"].(bool); stream && req.verb == "react" && !o.NoWait {
			return sendRounds(ctx, cl, o, req, opts, stdout, stderr)
		}
		id, err := cl.Submit(ctx, req.verb, req.branch, req.data, opts...)
		if errors.Is(err, client.ErrInvalidOption) {
			return usageError(stderr, err)
		}
		if err != nil {
			fmt.Fprintf(stderr, "publisher: send %s: %v\n", req.verb, err)
			return exitNoAnswer
		}
		if o.NoWait {
			fmt.Fprintln(stdout, id)
			return exitOK
		}
		reply, err := cl.Await(ctx, id)
		if err != nil {
			fmt.Fprintf(stderr, "publisher: no answer to request %s: %v\n(the request may still run: 'publisher result %s' reads its answer later)\n", id, err, id)
			return exitNoAnswer
		}
		return printReply(o, reply, stdout, stderr)
	})
}

// resultLong and cancelLong describe result and cancel in their help.
const (
	resultLong = "Prints the stored answer (result or error) of request ID."
	cancelLong = "Asks the workers to cancel request ID: a running request stops and is answered\nwith the code canceled; an answered request is not affected."
)

// result is `publisher result ID`: print the stored answer of a request.
func (a *app) result(fs *flag.FlagSet) func([]string) int {
	wait := fs.Bool("wait", false, "wait (at most --timeout) for the answer when none is stored yet")
	return func(args []string) int {
		id, err := requestIDArg("result", args)
		if err != nil {
			return usageError(a.stderr, err)
		}
		stdout, stderr := a.stdout, a.stderr
		return withClient(a.ctx, a.o, stderr, func(ctx context.Context, cl *client.Client) int {
			var reply *client.Reply
			var err error
			if *wait {
				reply, err = cl.Await(ctx, id)
			} else {
				reply, err = cl.Result(ctx, id)
			}
			switch {
			case errors.Is(err, client.ErrNoResult):
				fmt.Fprintf(stderr, "publisher: no answer is stored for request %s (not answered yet, unknown, or expired)\n", id)
				return exitNoResult
			case err != nil:
				fmt.Fprintf(stderr, "publisher: result of %s: %v\n", id, err)
				return exitNoAnswer
			}
			return printReply(a.o, reply, stdout, stderr)
		})
	}
}

// cancel is `publisher cancel ID`: ask the workers to cancel a request.
func (a *app) cancel(*flag.FlagSet) func([]string) int {
	return func(args []string) int {
		id, err := requestIDArg("cancel", args)
		if err != nil {
			return usageError(a.stderr, err)
		}
		return withClient(a.ctx, a.o, a.stderr, func(ctx context.Context, cl *client.Client) int {
			if err := cl.Cancel(ctx, id); err != nil {
				fmt.Fprintf(a.stderr, "publisher: cancel %s: %v\n", id, err)
				return exitNoAnswer
			}
			fmt.Fprintf(a.stdout, "cancel sent for request %s\n", id)
			return exitOK
		})
	}
}

// requestIDArg checks the one request id argument of command name.
func requestIDArg(name string, args []string) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("%s needs exactly one argument: the request id", name)
	}
	if !protocol.ValidToken(args[0]) {
		return "", fmt.Errorf("request id %q: want 1 to %d characters of [A-Za-z0-9_-]", args[0], protocol.MaxTokenLength)
	}
	return args[0], nil
}

// withClient connects within --timeout and runs do with the client and
// that deadline; it returns do's exit code, or why it could not connect.
func withClient(ctx context.Context, o *options, stderr io.Writer, do func(context.Context, *client.Client) int) int {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cl, nc, code := connect(ctx, o, stderr)
	if cl == nil {
		return code
	}
	defer nc.Close()
	return do(ctx, cl)
}

// connect returns a client, or nil and the exit code after printing why.
func connect(ctx context.Context, o *options, stderr io.Writer) (*client.Client, *nats.Conn, int) {
	nc, err := client.Connect(ctx, o.connectConfig())
	if errors.Is(err, client.ErrInvalidConfig) {
		return nil, nil, usageError(stderr, err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "publisher: cannot connect to NATS at %s: %v\n", client.RedactURL(o.NATSURL), err)
		return nil, nil, exitNoAnswer
	}
	cl, err := client.New(nc, client.Config{Prefix: o.Prefix, APIPrefix: o.APIPrefix, Timeout: o.Timeout, AwaitTimeout: o.Timeout, Source: "/lionbus/publisher"})
	if err != nil {
		nc.Close()
		return nil, nil, usageError(stderr, err)
	}
	return cl, nc, exitOK
}

// printReply prints an answer and returns the exit code: exitFailed for an
// error event.
func printReply(o *options, reply *client.Reply, stdout, stderr io.Writer) int {
	return printAnswer(o, reply, stdout, stderr, func(res *wire.Result) {
		renderResult(stdout, verbOf(reply.Type), res)
	})
}

// printAnswer prints an answer's head (see answerHead) and, without
// --json, its result with show; it returns the exit code: exitFailed for
// an error event or a result that cannot be decoded.
func printAnswer(o *options, reply *client.Reply, stdout, stderr io.Writer, show func(*wire.Result)) int {
	if !answerHead(o, reply, stdout, stderr) {
		return exitFailed
	}
	if o.JSON {
		return exitOK
	}
	res, code := answerResult(reply, stderr)
	if res == nil {
		return code
	}
	show(res)
	return exitOK
}

// answerHead prints what every command prints of an answer first: its data
// with --json, and for an error answer the error line; it reports whether
// the answer is a result.
func answerHead(o *options, reply *client.Reply, stdout, stderr io.Writer) bool {
	if o.JSON {
		fmt.Fprintln(stdout, render.IndentJSON(reply.Data))
	}
	if err := reply.Err(); err != nil {
		var re *client.RemoteError
		if errors.As(err, &re) {
			fmt.Fprintf(stderr, "error: %s: %s (request %s)\n", re.Code, re.Message, re.RequestID)
		} else {
			fmt.Fprintf(stderr, "error: %v\n", err)
		}
		return false
	}
	return true
}

// answerResult decodes the result of an answer answerHead accepted; when it
// cannot, it says so and returns exitFailed.
func answerResult(reply *client.Reply, stderr io.Writer) (*wire.Result, int) {
	res, err := reply.Result()
	if err != nil {
		fmt.Fprintf(stderr, "publisher: %v\n", err)
		return nil, exitFailed
	}
	return res, exitOK
}
