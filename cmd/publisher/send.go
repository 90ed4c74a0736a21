package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus"
)

// send connects, submits req and, unless --no-wait, waits for the answer
// and prints it.
func send(ctx context.Context, o *options, req *request, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	client, nc, code := connect(ctx, o, stderr)
	if client == nil {
		return code
	}
	defer nc.Close()

	var opts []bus.SubmitOption
	if o.ID != "" {
		opts = append(opts, bus.WithID(o.ID))
	}
	if o.Binary {
		opts = append(opts, bus.WithBinary())
	}
	id, err := client.Submit(ctx, req.verb, req.branch, req.data, opts...)
	if errors.Is(err, bus.ErrInvalidOption) {
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
	reply, err := client.Await(ctx, id)
	if err != nil {
		fmt.Fprintf(stderr, "publisher: no answer to request %s: %v\n(the request may still run: 'publisher result %s' reads its answer later)\n", id, err, id)
		return exitNoAnswer
	}
	return printReply(o, reply, stdout, stderr)
}

// runResult is `publisher result ID`: print the stored answer of a request.
func runResult(ctx context.Context, o *options, given map[string]bool, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("publisher result", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addGlobalFlags(fs, o)
	wait := fs.Bool("wait", false, "wait (at most --timeout) for the answer when none is stored yet")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: publisher result [flags] ID\n\nPrints the stored answer (result or error) of request ID.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	positional, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return usageError(stderr, err)
	}
	if len(positional) != 1 {
		return usageError(stderr, errors.New("result needs exactly one argument: the request id"))
	}
	id := positional[0]
	if !bus.ValidToken(id) {
		return usageError(stderr, fmt.Errorf("request id %q: want 1 to %d characters of [A-Za-z0-9_-]", id, bus.MaxTokenLength))
	}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := globalFromEnv(fs, given, envFlags, os.LookupEnv); err != nil {
		return usageError(stderr, err)
	}
	if err := o.validate(); err != nil {
		return usageError(stderr, err)
	}

	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	client, nc, code := connect(ctx, o, stderr)
	if client == nil {
		return code
	}
	defer nc.Close()
	var reply *bus.Reply
	if *wait {
		reply, err = client.Await(ctx, id)
	} else {
		reply, err = client.Result(ctx, id)
	}
	switch {
	case errors.Is(err, bus.ErrNoResult):
		fmt.Fprintf(stderr, "publisher: no answer is stored for request %s (not answered yet, unknown, or expired)\n", id)
		return exitNoResult
	case err != nil:
		fmt.Fprintf(stderr, "publisher: result of %s: %v\n", id, err)
		return exitNoAnswer
	}
	return printReply(o, reply, stdout, stderr)
}

// runCancel is `publisher cancel ID`: ask the workers to cancel a request.
func runCancel(ctx context.Context, o *options, given map[string]bool, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("publisher cancel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addGlobalFlags(fs, o)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: publisher cancel [flags] ID\n\nAsks the workers to cancel request ID: a running request stops and is answered\nwith the code canceled; an answered request is not affected.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	positional, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return usageError(stderr, err)
	}
	if len(positional) != 1 {
		return usageError(stderr, errors.New("cancel needs exactly one argument: the request id"))
	}
	id := positional[0]
	if !bus.ValidToken(id) {
		return usageError(stderr, fmt.Errorf("request id %q: want 1 to %d characters of [A-Za-z0-9_-]", id, bus.MaxTokenLength))
	}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := globalFromEnv(fs, given, envFlags, os.LookupEnv); err != nil {
		return usageError(stderr, err)
	}
	if err := o.validate(); err != nil {
		return usageError(stderr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	client, nc, code := connect(ctx, o, stderr)
	if client == nil {
		return code
	}
	defer nc.Close()
	if err := client.Cancel(ctx, id); err != nil {
		fmt.Fprintf(stderr, "publisher: cancel %s: %v\n", id, err)
		return exitNoAnswer
	}
	fmt.Fprintf(stdout, "cancel sent for request %s\n", id)
	return exitOK
}

// connect returns a client, or nil and the exit code after printing why.
func connect(ctx context.Context, o *options, stderr io.Writer) (*bus.Client, *nats.Conn, int) {
	nc, err := bus.Connect(ctx, o.connectConfig())
	if errors.Is(err, bus.ErrInvalidConfig) {
		return nil, nil, usageError(stderr, err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "publisher: cannot connect to NATS at %s: %v\n", o.NATSURL, err)
		return nil, nil, exitNoAnswer
	}
	client, err := bus.NewClient(nc, bus.ClientConfig{Prefix: o.Prefix, Timeout: o.Timeout, AwaitTimeout: o.Timeout, Source: "/lionbus/publisher"})
	if err != nil {
		nc.Close()
		return nil, nil, usageError(stderr, err)
	}
	return client, nc, exitOK
}

// printReply prints an answer and returns the exit code: exitFailed for an
// error event.
func printReply(o *options, reply *bus.Reply, stdout, stderr io.Writer) int {
	if o.JSON {
		fmt.Fprintln(stdout, indentJSON(reply.Data))
	}
	if err := reply.Err(); err != nil {
		var re *bus.RemoteError
		if errors.As(err, &re) {
			fmt.Fprintf(stderr, "error: %s: %s (request %s)\n", re.Code, re.Message, re.RequestID)
		} else {
			fmt.Fprintf(stderr, "error: %v\n", err)
		}
		return exitFailed
	}
	if o.JSON {
		return exitOK
	}
	res, err := reply.Result()
	if err != nil {
		fmt.Fprintf(stderr, "publisher: %v\n", err)
		return exitFailed
	}
	render(stdout, verbOf(reply.Type), res)
	return exitOK
}

// indentJSON pretty-prints raw JSON, or returns it as is when it is not
// valid.
func indentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
