package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
)

// TestStart_serves_named_operations: bus.Start wires Config.Operations into
// the engine, so a registered op.NAME is served over the bus, and an
// unregistered one is answered unknown_verb.
func TestStart_serves_named_operations(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opsReg := ops.NewOperations()
	err := opsReg.Register("greet", ops.OperationFunc(func(ctx context.Context, _ ops.Doer, req ops.Request) (*ops.Result, error) {
		var d struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(req.Data, &d)
		v, _ := json.Marshal("hello " + d.Name)
		return &ops.Result{Value: v}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := bus.Start(ctx, bus.Config{
		Embedded:   embedded.Config{Port: embedded.RandomPort, StoreDir: t.TempDir()},
		Operations: opsReg,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	defer func() { _ = svc.Stop(ctx) }()
	if svc.Server() == nil || svc.Resources() == nil || svc.Engine() == nil || svc.Store() == nil {
		t.Fatal("Start left a part unset")
	}
	cl, err := client.New(svc.Conn(), client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := cl.Do(ctx, "op.greet", "", map[string]any{"name": "ada"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Result()
	if err != nil || string(res.Value) != `"hello ada"` {
		t.Fatalf("op.greet = %v, %v", res, err)
	}
	r, err = cl.Do(ctx, "op.absent", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var re *client.RemoteError
	if !errors.As(r.Err(), &re) || re.Code != ops.CodeUnknownVerb {
		t.Fatalf("op.absent answered %v, want unknown_verb", r.Err())
	}
}

func TestStart_rejects_bad_config(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range map[string]bus.Config{
		"negative startup timeout": {StartupTimeout: -time.Second},
		"bad prefix":               {Provision: provision.Config{Prefix: "a.b"}},
		"negative payload":         {Provision: provision.Config{MaxPayload: -1}},
	} {
		if svc, err := bus.Start(ctx, cfg); err == nil {
			svc.Close()
			t.Errorf("%s: Start succeeded", name)
		} else if !errors.Is(err, bus.ErrInvalidConfig) && !errors.Is(err, provision.ErrInvalidConfig) {
			t.Errorf("%s: %v, want an invalid-config error", name, err)
		}
	}
}
