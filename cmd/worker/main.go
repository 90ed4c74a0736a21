// Command worker runs a lionbus worker: it consumes operation requests from
// NATS JetStream, runs them with the operations layer and publishes their
// results. Without --nats it starts an embedded NATS server, so that one
// binary is a complete, single-node lionbus; --demo adds a short scripted
// conversation that shows the service at work.
//
// The main function is thin: flags become a config, run serves it until
// SIGINT or SIGTERM, and the exit code says how it ended (0 clean stop,
// 1 failure, 2 usage error). Run `worker --help` for the flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, serves until ctx ends and returns the exit code. Human
// output (the NATS URL, the demo) goes to stdout, logs to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	warnEnv(environ(), stderr)
	cfg, err := parseConfig(args, stdout, stderr)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "worker: %v; see 'worker --help'\n", err)
		return exitUsage
	}
	log, err := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return exitUsage
	}
	if err := serve(ctx, cfg, log, stdout); err != nil {
		log.Error().Err(err).Msg("worker stopped with an error")
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return exitFailure
	}
	return exitOK
}
