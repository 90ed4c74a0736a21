// Command notes serves the example notes tools (note_put, note_get,
// note_list, over the KV bucket <prefix>_notes) to lionbus workers, with
// the pkg/tools SDK:
//
//	go run ./examples/tools/notes --nats nats://127.0.0.1:4222
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
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/examples/tools/demotools"
	"github.com/lionbus/lionbus/pkg/tools"
)

func main() {
	url := flag.String("nats", nats.DefaultURL, "NATS server URL")
	prefix := flag.String("prefix", tools.DefaultPrefix, "lionbus subject prefix")
	flag.Parse()
	if err := run(*url, *prefix); err != nil {
		fmt.Fprintln(os.Stderr, "notes:", err)
		os.Exit(1)
	}
}

func run(url, prefix string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	nc, err := nats.Connect(url, nats.Name("lionbus notes"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cfg, err := demotools.Notes(ctx, js, prefix)
	if err != nil {
		return err
	}
	svc, err := tools.Serve(ctx, nc, cfg)
	if err != nil {
		return err
	}
	fmt.Printf("notes serving note_put, note_get and note_list under %s.tool; Ctrl-C to stop\n", prefix)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return svc.Stop(sctx)
}
