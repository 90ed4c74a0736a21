// Command calculator serves the example calculator tools (calculate,
// to_celsius) to lionbus workers, with the pkg/tools SDK:
//
//	go run ./examples/tools/calculator --nats nats://127.0.0.1:4222
//
// Run several copies: they share the invocations in a queue group.
package main

import (
	"context"
	"os"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/examples/tools/demotools"
	"github.com/lionbus/lionbus/pkg/tools"
)

func main() {
	os.Exit(demotools.Main("calculator", func(_ context.Context, _ jetstream.JetStream, prefix string) (tools.ServiceConfig, error) {
		return demotools.Calculator(prefix), nil
	}))
}
