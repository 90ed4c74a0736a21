package tools_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

// BenchmarkInvoke measures one invocation through the NATS invoker and an
// SDK service on the embedded server: with results remembered by key (the
// default: a KV create and update per call), without, and a repeated key
// (answered from the results bucket).
func BenchmarkInvoke(b *testing.B) {
	for _, bc := range []struct {
		name   string
		window time.Duration
		repeat bool
	}{
		{"remembered", 0, false},
		{"not_remembered", -1, false},
		{"repeated_key", 0, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := bustest.NewServer(b)
			nc, err := nats.Connect(srv.ClientURL())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			svc, err := tools.Serve(context.Background(), nc, tools.ServiceConfig{Compile: toolschema.Compile, Name: "bench", Version: "1.0.0",
				ResultWindow: bc.window, Tools: []tools.Tool{echoTool("a")}})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = svc.Stop(context.Background()) }()
			cnc, err := nats.Connect(srv.ClientURL())
			if err != nil {
				b.Fatal(err)
			}
			defer cnc.Close()
			inv, err := tools.NewInvoker(cnc, tools.InvokerConfig{})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			args := map[string]any{"text": "hello"}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				key := fmt.Sprint("bench/tool/", i)
				if bc.repeat {
					key = "bench/tool/0"
				}
				out, err := inv.Invoke(ctx, ops.ToolInvocation{Function: "echo", Arguments: args, IdempotencyKey: key, RequestID: "bench"})
				if err != nil || out.Error != nil {
					b.Fatal(err, out.Error)
				}
			}
		})
	}
}
