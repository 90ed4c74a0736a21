package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

// startExampleServer starts an embedded server with JetStream on a free
// port and connects to it.
func startExampleServer(ctx context.Context) (*embedded.Server, *nats.Conn, error) {
	srv, err := embedded.Start(ctx, embedded.Config{Port: embedded.RandomPort})
	if err != nil {
		return nil, nil, err
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		srv.Shutdown()
		return nil, nil, err
	}
	return srv, nc, nil
}

// A tool service written with the SDK: one tool with a schema, served in
// a queue group and registered in lion_tools while it runs.
func ExampleServe() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, nc, err := startExampleServer(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()
	defer nc.Close()

	svc, err := tools.Serve(ctx, nc, tools.ServiceConfig{
		Compile: toolschema.Compile, Name: "greeter", Version: "1.0.0",
		Tools: []tools.Tool{{
			Name:        "greet",
			Description: "Greets someone by name.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
			Handler: func(_ context.Context, args map[string]any) (any, error) {
				if args["name"] == "" {
					return nil, tools.Errorf("empty_name", "whom should I greet?")
				}
				return "Hello, " + args["name"].(string) + "!", nil
			},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = svc.Stop(ctx) }()

	js, _ := jetstream.New(nc)
	reg, err := tools.OpenRegistry(ctx, js, "", zerolog.Nop())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = reg.Close() }()
	for _, e := range reg.List() {
		fmt.Println("registered:", e.Name, e.Subject, e.Version)
	}
	inv, _ := tools.NewInvoker(nc, tools.InvokerConfig{Registry: reg})
	for i, args := range []map[string]any{{"name": "Ada"}, {"name": ""}, {"name": 7}} {
		out, err := inv.Invoke(ctx, ops.ToolInvocation{Function: "greet", Arguments: args, IdempotencyKey: fmt.Sprint("example/tool/", i)})
		switch {
		case err != nil:
			fmt.Println(err)
		case out.Error != nil:
			fmt.Println("error:", out.Error.Code)
		default:
			fmt.Println("output:", out.Output)
		}
	}
	// Output:
	// registered: greet lion.tool.greet 1.0.0
	// output: Hello, Ada!
	// error: empty_name
	// error: invalid_arguments
}

// The invoker turns every failure to get an answer into an error value:
// an unregistered tool, a registered tool no service answers, a deadline.
func ExampleInvoker_Invoke() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, nc, err := startExampleServer(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()
	defer nc.Close()
	js, _ := jetstream.New(nc)
	reg, err := tools.OpenRegistry(ctx, js, "", zerolog.Nop())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = reg.Close() }()
	// A registry entry whose service is not running.
	kv, _ := js.KeyValue(ctx, "lion_tools")
	_, _ = kv.Put(ctx, "refund", []byte(`{"name":"refund","parameters":{"type":"object"},"subject":"lion.tool.refund"}`))

	inv, _ := tools.NewInvoker(nc, tools.InvokerConfig{Registry: reg, Timeout: 2 * time.Second})
	for _, name := range []string{"nope", "refund"} {
		_, err := inv.Invoke(ctx, ops.ToolInvocation{Function: name, IdempotencyKey: "r1/tool/0", RequestID: "r1"})
		fmt.Println(errors.Is(err, ops.ErrNoTool), errors.Is(err, tools.ErrNoService))
	}
	// Output:
	// true false
	// false true
}
