package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/console"
)

// consoleLong describes publisher console in its help.
const consoleLong = `Serves the web console: the branches, a branch's conversation as a
timeline (messages, tool calls with their arguments and results, usage),
its lineage, a run's chunks as they stream, the batches, the dead letters,
the tools and the approvals (docs/console.md).

The console connects to NATS with the same settings and credentials as
every other publisher command, so it shows what that NATS user may read.
It answers approvals as --as (default --user); without either it lists
them only. It listens on --listen, loopback by default, until interrupted.`

// consoleCmd is `publisher console`.
func (a *app) consoleCmd(fs *flag.FlagSet) func([]string) int {
	listen := fs.String("listen", console.DefaultListen, "address to serve the console on (host:port; port 0 picks one)")
	as := fs.String("as", "", "the NATS user approvals are answered as (default --user; neither: the console answers none)")
	return func(args []string) int {
		if len(args) != 0 {
			return usageError(a.stderr, fmt.Errorf("console takes no arguments, got %q", args))
		}
		ctx := a.ctx
		cctx, cancel := context.WithTimeout(ctx, a.o.Timeout)
		cl, nc, code := connect(cctx, a.o, a.stderr)
		cancel()
		if cl == nil {
			return code
		}
		defer nc.Close()
		approver := *as
		if approver == "" {
			approver = a.o.User
		}
		return serveConsole(ctx, cl, *listen, a, console.WithApprover(approver))
	}
}

// serveConsole serves the console of cl on listen until ctx ends.
func serveConsole(ctx context.Context, cl *client.Client, listen string, a *app, opts ...console.Option) int {
	srv, err := console.New(cl, opts...)
	if errors.Is(err, console.ErrInvalidOption) {
		return usageError(a.stderr, fmt.Errorf("--as: %w", err))
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "publisher: console: %v\n", err)
		return exitFailed
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return usageError(a.stderr, fmt.Errorf("--listen %q: %w", listen, err))
	}
	fmt.Fprintf(a.stdout, "console: http://%s/\n", ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintf(a.stderr, "publisher: console: %v\n", err)
		return exitFailed
	}
	return exitOK
}
