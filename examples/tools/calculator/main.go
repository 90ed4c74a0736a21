// Command calculator serves the example calculator tools (calculate,
// to_celsius) to lionbus workers, with the pkg/tools SDK:
//
//	go run ./examples/tools/calculator --nats nats://127.0.0.1:4222
//
// Run several copies: they share the invocations in a queue group.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/examples/tools/demotools"
	"github.com/lionbus/lionbus/pkg/tools"
)

func main() {
	url := flag.String("nats", nats.DefaultURL, "NATS server URL")
	prefix := flag.String("prefix", tools.DefaultPrefix, "lionbus subject prefix")
	flag.Parse()
	if err := run(*url, *prefix); err != nil {
		fmt.Fprintln(os.Stderr, "calculator:", err)
		os.Exit(1)
	}
}

func run(url, prefix string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	nc, err := nats.Connect(url, nats.Name("lionbus calculator"))
	if err != nil {
		return err
	}
	defer nc.Close()
	svc, err := tools.Serve(ctx, nc, demotools.Calculator(prefix))
	if err != nil {
		return err
	}
	fmt.Printf("calculator serving on %s.tool.calculate and %s.tool.to_celsius; Ctrl-C to stop\n", prefix, prefix)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return svc.Stop(sctx)
}
