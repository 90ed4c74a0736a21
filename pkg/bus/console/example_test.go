package console_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/console"
)

// Serve the console of a NATS user on a loopback port until interrupted,
// as publisher console does.
func ExampleServer_Serve() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	nc, err := nats.Connect(nats.DefaultURL, nats.UserCredentials("me.creds"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	cl, err := client.New(nc, client.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := console.New(cl)
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, err := net.Listen("tcp", console.DefaultListen)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("console: http://%s/\n", ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Println(err)
	}
}
