package protocol_test

import (
	"context"
	"fmt"
	"os"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/schemas"
	"github.com/nats-io/nats.go/jetstream"
)

// Start an embedded server, provision it, and decode a request published
// the way `nats pub` would: a CloudEvent JSON body and no headers.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "lionbus-example-*")
	defer os.RemoveAll(dir)

	srv, err := embedded.Start(ctx, embedded.Config{Port: embedded.RandomPort, StoreDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()
	nc, err := client.Connect(ctx, client.ConnectConfig{URL: srv.ClientURL()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	res, err := provision.Ensure(ctx, js, provision.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}

	body := `{"specversion":"1.0","id":"req-42","source":"/example","type":"lionbus.op.greet.request","data":{"name":"Ada"}}`
	if _, err := js.Publish(ctx, res.Subjects.Op("op.greet"), []byte(body)); err != nil {
		fmt.Println(err)
		return
	}
	batch, err := res.Workers.Fetch(1)
	if err != nil {
		fmt.Println(err)
		return
	}
	codec, _ := protocol.NewCodec(protocol.CodecConfig{Prefix: res.Config.Prefix, MaxPayload: res.Config.MaxPayload, Validator: schemas.Validator{}})
	for msg := range batch.Messages() {
		req, err := codec.DecodeRequestJS(msg)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(req.Verb, req.ID(), string(req.Data), req.ReplyTo)
		_ = msg.Ack()
	}
	// Output:
	// op.greet req-42 {"name":"Ada"} lion.reply.req-42
}
