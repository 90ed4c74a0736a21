package tools_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

func connectTo(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// A tool service started while JetStream does not answer (a cluster still
// forming; a bucket's create request lost in a leader election) keeps
// trying to open its buckets and serves once JetStream answers, instead of
// failing on the first request that timed out.
func TestServe_retries_opening_buckets_until_JetStream_answers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// blackHole makes JetStream API requests go unanswered (a
		// subscriber that never replies) instead of finding no responders.
		blackHole bool
		// wantInLog is what a logged failed try says.
		wantInLog string
	}{
		{name: "JetStream enabled late", wantInLog: "no responders"},
		{name: "request never answered", blackHole: true, wantInLog: "deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := bustest.NewCoreServer(t)
			if tt.blackHole {
				hole := connectTo(t, ns.ClientURL())
				if _, err := hole.Subscribe("$JS.API.>", func(*nats.Msg) {}); err != nil {
					t.Fatal(err)
				}
				if err := hole.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			logs := &bustest.SyncBuffer{}
			log := zerolog.New(logs).Level(zerolog.WarnLevel)
			type served struct {
				svc *tools.Service
				err error
			}
			done := make(chan served, 1)
			nc := connectTo(t, ns.ClientURL())
			go func() {
				svc, err := tools.Serve(context.Background(), nc, tools.ServiceConfig{
					Compile: toolschema.Compile, Name: "late", Version: "1.0.0", Logger: log, StartupTimeout: time.Minute,
					Tools: []tools.Tool{{Name: "echo", Handler: func(_ context.Context, args map[string]any) (any, error) { return args, nil }}},
				})
				done <- served{svc, err}
			}()
			// Enable JetStream only once a try has failed and was logged
			// (Serve gives up after its StartupTimeout: the wait is bounded).
			for !strings.Contains(logs.String(), "retrying") {
				select {
				case s := <-done:
					t.Fatalf("Serve returned before JetStream was enabled: %v", s.err)
				case <-time.After(20 * time.Millisecond):
				}
			}
			if err := ns.EnableJetStream(&server.JetStreamConfig{StoreDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			s := <-done
			if s.err != nil {
				t.Fatalf("Serve: %v\n%s", s.err, logs)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = s.svc.Stop(ctx)
			})
			if !strings.Contains(logs.String(), tt.wantInLog) {
				t.Errorf("the log does not say why a try failed (want %q):\n%s", tt.wantInLog, logs)
			}
			js, err := jetstream.New(connectTo(t, ns.ClientURL()))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			reg, err := js.KeyValue(ctx, "lion_tools")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reg.Get(ctx, "echo"); err != nil {
				t.Errorf("the tool's registry entry: %v", err)
			}
			if _, err := js.KeyValue(ctx, tools.ResultsBucket("lion")); err != nil {
				t.Errorf("the results bucket: %v", err)
			}
		})
	}
}

// Without JetStream, Serve gives up after its startup timeout with the
// last try's error, and a negative timeout is a config error.
func TestServe_gives_up_after_its_startup_timeout(t *testing.T) {
	t.Parallel()
	ns := bustest.NewCoreServer(t)
	cfg := tools.ServiceConfig{
		Compile: toolschema.Compile, Name: "never", Version: "1.0.0", StartupTimeout: 700 * time.Millisecond,
		Tools: []tools.Tool{{Name: "echo", Handler: func(context.Context, map[string]any) (any, error) { return nil, nil }}},
	}
	_, err := tools.Serve(context.Background(), connectTo(t, ns.ClientURL()), cfg)
	if !errors.Is(err, nats.ErrNoResponders) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "gave up after") {
		t.Errorf("Serve without JetStream: %v; want no responders, given up after the startup timeout", err)
	}
	cfg.StartupTimeout = -time.Second
	if _, err := tools.Serve(context.Background(), connectTo(t, ns.ClientURL()), cfg); !errors.Is(err, tools.ErrInvalidConfig) {
		t.Errorf("Serve with a negative StartupTimeout: %v; want ErrInvalidConfig", err)
	}
}

// The workers create the tool results bucket with the max age the SDK
// would give it: the two must not drift apart.
func TestResultWindow_is_the_provisioned_max_age(t *testing.T) {
	if provision.ToolResultsMaxAge != tools.DefaultResultWindow {
		t.Errorf("provision.ToolResultsMaxAge = %v, tools.DefaultResultWindow = %v", provision.ToolResultsMaxAge, tools.DefaultResultWindow)
	}
}
