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

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/tools"
)

// Configure returns the service configuration of an example tool service
// for prefix; it may create what the service needs (a bucket) through js.
type Configure func(ctx context.Context, js jetstream.JetStream, prefix string) (tools.ServiceConfig, error)

// Main is the whole command of an example tool service named name: it
// reads its flags (each also LIONBUS_<FLAG> in the environment, which is
// where a password belongs: never on the command line), connects, serves
// the tools configure returns until SIGINT or SIGTERM, stops cleanly
// (removing their registry entries) and returns the exit code.
func Main(name string, configure Configure) int {
	env := func(k, def string) string {
		if v, ok := os.LookupEnv("LIONBUS_" + k); ok {
			return v
		}
		return def
	}
	cfg := client.ConnectConfig{Name: "lionbus " + name, Password: os.Getenv("LIONBUS_PASSWORD")}
	flag.StringVar(&cfg.URL, "nats", env("NATS", nats.DefaultURL), "NATS server URL (comma-separated list allowed)")
	flag.StringVar(&cfg.User, "user", env("USER", ""), "NATS user (its password in $LIONBUS_PASSWORD or --password-file)")
	flag.StringVar(&cfg.PasswordFile, "password-file", env("PASSWORD_FILE", ""), "file holding the NATS password")
	flag.StringVar(&cfg.InboxPrefix, "inbox-prefix", env("INBOX_PREFIX", ""), "inbox prefix of the connection (default _INBOX)")
	prefix := flag.String("prefix", env("PREFIX", tools.DefaultPrefix), "lionbus subject prefix")
	flag.Parse()
	if cfg.PasswordFile != "" {
		cfg.Password = ""
	}
	if err := serve(name, cfg, *prefix, configure); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

func serve(name string, cc client.ConnectConfig, prefix string, configure Configure) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	nc, err := client.Connect(ctx, cc)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cfg, err := configureUntilReady(ctx, name, js, prefix, configure)
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

// configureUntilReady runs configure, each try bounded by 5s, again after
// a second while it fails (JetStream not answering yet: a cluster still
// forming), for at most tools.DefaultStartupTimeout.
func configureUntilReady(ctx context.Context, name string, js jetstream.JetStream, prefix string, configure Configure) (tools.ServiceConfig, error) {
	ctx, cancel := context.WithTimeout(ctx, tools.DefaultStartupTimeout)
	defer cancel()
	for {
		tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
		cfg, err := configure(tctx, js, prefix)
		tcancel()
		if err == nil {
			return cfg, nil
		}
		fmt.Fprintf(os.Stderr, "%s: %v; trying again\n", name, err)
		select {
		case <-ctx.Done():
			return cfg, fmt.Errorf("%w (gave up: %w)", err, context.Cause(ctx))
		case <-time.After(time.Second):
		}
	}
}
