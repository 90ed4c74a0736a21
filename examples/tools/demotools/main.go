package demotools

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/tools"
)

// Configure returns the service configuration of an example tool service
// for prefix; it may create what the service needs (a bucket) through js.
type Configure func(ctx context.Context, js jetstream.JetStream, prefix string) (tools.ServiceConfig, error)

// Main is the whole command of an example tool service named name: it
// reads --nats and --prefix, connects, serves the tools configure returns
// until SIGINT or SIGTERM, stops cleanly (removing their registry entries)
// and returns the exit code.
func Main(name string, configure Configure) int {
	url := flag.String("nats", nats.DefaultURL, "NATS server URL")
	prefix := flag.String("prefix", tools.DefaultPrefix, "lionbus subject prefix")
	flag.Parse()
	if err := serve(name, *url, *prefix, configure); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

func serve(name, url, prefix string, configure Configure) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	nc, err := nats.Connect(url, nats.Name("lionbus "+name))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cfg, err := configure(ctx, js, prefix)
	if err != nil {
		return err
	}
	svc, err := tools.Serve(ctx, nc, cfg)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(cfg.Tools))
	for _, t := range cfg.Tools {
		names = append(names, t.Name)
	}
	fmt.Printf("%s serving %v under %s.tool; Ctrl-C to stop\n", name, names, prefix)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return svc.Stop(sctx)
}
