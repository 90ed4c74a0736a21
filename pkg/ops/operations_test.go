package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// constOp returns an operation answering the JSON value v.
func constOp(v string) ops.Operation {
	return ops.OperationFunc(func(context.Context, ops.Doer, ops.Request) (*ops.Result, error) {
		return &ops.Result{Value: json.RawMessage(v)}, nil
	})
}

// runOp runs the operation registered as name and returns its value.
func runOp(t *testing.T, reg *ops.Operations, name string) string {
	t.Helper()
	op, err := reg.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := op.Run(context.Background(), nil, ops.Request{ID: "r", Verb: ops.OpVerbPrefix + name})
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Value)
}

func TestOperations_Register(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		reg     string // the name to register
		op      ops.Operation
		opts    []ops.RegisterOption
		wantErr error
		want    string // value of the entry afterwards, if it succeeded
	}{
		{name: "new name", reg: "fresh", op: constOp(`"new"`), want: `"new"`},
		// 0021-D2-01: an existing name is refused unless update is asked for.
		{name: "duplicate refused", reg: "taken", op: constOp(`"second"`), wantErr: ops.ErrOperationExists},
		{name: "duplicate with update replaces", reg: "taken", op: constOp(`"second"`), opts: []ops.RegisterOption{ops.WithUpdate()}, want: `"second"`},
		{name: "update of a new name adds it", reg: "other", op: constOp(`"x"`), opts: []ops.RegisterOption{ops.WithUpdate()}, want: `"x"`},
		// 0021-D2-05: a built-in verb cannot be shadowed, even with update.
		{name: "built-in verb refused", reg: "communicate", op: constOp(`1`), wantErr: ops.ErrReservedOperation},
		{name: "built-in verb refused with update", reg: "communicate", op: constOp(`1`), opts: []ops.RegisterOption{ops.WithUpdate()}, wantErr: ops.ErrReservedOperation},
		{name: "verb to come refused", reg: "operate", op: constOp(`1`), wantErr: ops.ErrReservedOperation},
		{name: "built-in verb in another case refused", reg: "ReAct", op: constOp(`1`), wantErr: ops.ErrReservedOperation},
		// 0021-D2-02 (b): the registry takes one typed handler; a nil one is refused.
		{name: "nil operation", reg: "nothing", op: nil, wantErr: ops.ErrInvalidOperation},
		// 0021-D2-03 (b): the explicit name must be a valid subject token.
		{name: "empty name", reg: "", op: constOp(`1`), wantErr: ops.ErrInvalidOperation},
		{name: "dotted name", reg: "a.b", op: constOp(`1`), wantErr: ops.ErrInvalidOperation},
		{name: "wildcard name", reg: "a*", op: constOp(`1`), wantErr: ops.ErrInvalidOperation},
		{name: "name with a space", reg: "a b", op: constOp(`1`), wantErr: ops.ErrInvalidOperation},
		{name: "name too long", reg: strings.Repeat("n", ops.MaxIDLength+1), op: constOp(`1`), wantErr: ops.ErrInvalidOperation},
		{name: "longest name", reg: strings.Repeat("n", ops.MaxIDLength), op: constOp(`"long"`), want: `"long"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := ops.NewOperations()
			if err := reg.Register("taken", constOp(`"first"`)); err != nil {
				t.Fatal(err)
			}
			err := reg.Register(tt.reg, tt.op, tt.opts...)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Register(%q) = %v, want %v", tt.reg, err, tt.wantErr)
				}
				if got := runOp(t, reg, "taken"); got != `"first"` {
					t.Fatalf("a refused registration changed the registry: taken = %s", got)
				}
				if _, err := reg.Lookup(tt.reg); tt.reg != "taken" && !errors.Is(err, ops.ErrUnknownOperation) {
					t.Fatalf("a refused name is registered: Lookup err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Register(%q) = %v", tt.reg, err)
			}
			if got := runOp(t, reg, tt.reg); got != tt.want {
				t.Fatalf("%s = %s, want %s", tt.reg, got, tt.want)
			}
		})
	}
}

// 0021-D2-05: every built-in verb the engine serves is reserved, so a named
// operation can never redefine one.
// 0021-D1-05: the verbs served are all in the one list of the layer's verb
// names (builtinVerbs), which the reservation checks.
func TestOperations_engine_verbs_are_reserved(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reg := b.eng.Operations()
	checked := 0
	for _, v := range b.eng.Verbs() {
		if !ops.ValidID(v) {
			continue // branch.*: not a valid operation name anyway
		}
		checked++
		if err := reg.Register(v, constOp(`1`), ops.WithUpdate()); !errors.Is(err, ops.ErrReservedOperation) {
			t.Errorf("Register(%q) = %v, want ErrReservedOperation", v, err)
		}
	}
	if checked == 0 {
		t.Fatal("no verb was checked")
	}
}

func TestOperations_zero_value_and_Names(t *testing.T) {
	t.Parallel()
	var reg ops.Operations
	if _, err := reg.Lookup("a"); !errors.Is(err, ops.ErrUnknownOperation) {
		t.Fatalf("Lookup on the zero value: %v", err)
	}
	for _, n := range []string{"zeta", "alpha", "mid"} {
		if err := reg.Register(n, constOp(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(reg.Names()); got != "[alpha mid zeta]" {
		t.Fatalf("Names() = %s", got)
	}
}

func TestOperations_concurrent_use(t *testing.T) {
	t.Parallel()
	reg := ops.NewOperations()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("op%d", i)
			if err := reg.Register(name, constOp(`1`)); err != nil {
				t.Error(err)
			}
			if err := reg.Register("shared", constOp(`2`), ops.WithUpdate()); err != nil {
				t.Error(err)
			}
			if _, err := reg.Lookup(name); err != nil {
				t.Error(err)
			}
			_ = reg.Names()
		})
	}
	wg.Wait()
	if n := len(reg.Names()); n != 9 {
		t.Fatalf("%d names registered, want 9", n)
	}
}

func TestEngine_named_operations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.mustDo(t, "branch.create", "", `{"branch_id":"b1","chat_model":"scripted:echo"}`)

	// An operation that composes a built-in verb through the Doer, with a
	// sub-request id derived from its own.
	var got ops.Request
	greet := ops.OperationFunc(func(ctx context.Context, eng ops.Doer, req ops.Request) (*ops.Result, error) {
		got = req
		var args struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(req.Data, &args); err != nil {
			return nil, ops.Errorf(ops.CodeInvalidRequest, "bad arguments: %v", err)
		}
		return eng.Do(ctx, ops.Request{
			ID: req.ID + "/greet", Verb: "communicate", BranchID: req.BranchID,
			Data: json.RawMessage(fmt.Sprintf(`{"instruction":"hello %s"}`, args.Name)),
		})
	})
	// 0021-D2-04 (b): the engine's registry is shared, so a registration
	// made after the engine was built is served.
	if err := b.eng.Operations().Register("greet", greet); err != nil {
		t.Fatal(err)
	}
	req := ops.Request{ID: "op-1", Verb: "op.greet", BranchID: "b1", Data: json.RawMessage(`{"name":"lion"}`)}
	res, err := b.eng.Do(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `"hello lion"` || got.Verb != "op.greet" || got.ID != "op-1" || got.BranchID != "b1" {
		t.Fatalf("value %s, operation saw %+v", res.Value, got)
	}
	if n := len(b.branch(t, "b1").Messages); n != 2 {
		t.Fatalf("the composed communicate recorded %d messages, want 2", n)
	}
	// Redelivered, the sub-request is answered from history: no new model call.
	calls := b.prov.count()
	if res, err = b.eng.Do(ctx, req); err != nil || !res.Replayed || b.prov.count() != calls {
		t.Fatalf("redelivery: res %+v, err %v, model calls %d -> %d", res, err, calls, b.prov.count())
	}

	for _, reg := range []struct {
		name string
		op   ops.Operation
	}{
		{"nil_result", ops.OperationFunc(func(context.Context, ops.Doer, ops.Request) (*ops.Result, error) { return nil, nil })},
		{"coded", ops.OperationFunc(func(context.Context, ops.Doer, ops.Request) (*ops.Result, error) {
			return nil, ops.Errorf(ops.CodeInvalidRequest, "needs x")
		})},
		{"plain_error", ops.OperationFunc(func(context.Context, ops.Doer, ops.Request) (*ops.Result, error) {
			return nil, errors.New("boom")
		})},
		{"canceled", ops.OperationFunc(func(ctx context.Context, _ ops.Doer, _ ops.Request) (*ops.Result, error) {
			return nil, ctx.Err()
		})},
	} {
		if err := b.eng.Operations().Register(reg.name, reg.op); err != nil {
			t.Fatal(err)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	tests := []struct {
		name      string
		ctx       context.Context
		verb      string
		id        string
		wantCode  ops.Code
		wantIs    error
		wantValue string
	}{
		{name: "no branch needed", verb: "op.nil_result", wantValue: "null"},
		// 0021-D2-06: a missing name is an unknown-operation error.
		{name: "unknown operation", verb: "op.nope", wantCode: ops.CodeUnknownVerb, wantIs: ops.ErrUnknownOperation},
		{name: "empty operation name", verb: "op.", wantCode: ops.CodeUnknownVerb, wantIs: ops.ErrUnknownOperation},
		// 0021-D2-05: op.NAME never reaches a built-in verb.
		{name: "built-in verb through op", verb: "op.communicate", wantCode: ops.CodeUnknownVerb, wantIs: ops.ErrUnknownOperation},
		{name: "unknown verb", verb: "greet", wantCode: ops.CodeUnknownVerb},
		{name: "request id required", verb: "op.nil_result", id: "-", wantCode: ops.CodeInvalidRequest},
		// 0021-D1-07: failures reach the caller as errors with stable codes.
		{name: "coded error kept", verb: "op.coded", wantCode: ops.CodeInvalidRequest},
		{name: "plain error is internal", verb: "op.plain_error", wantCode: ops.CodeInternal},
		{name: "context error", ctx: canceled, verb: "op.canceled", wantCode: ops.CodeCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.ctx
			if c == nil {
				c = ctx
			}
			id := tt.id
			switch id {
			case "":
				id = "req-" + tt.name
			case "-":
				id = ""
			}
			res, err := b.eng.Do(c, ops.Request{ID: id, Verb: tt.verb})
			if tt.wantCode != "" {
				if code(err) != tt.wantCode {
					t.Fatalf("err = %v, want code %s", err, tt.wantCode)
				}
				if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
					t.Fatalf("err = %v, want it to match %v", err, tt.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Value) != tt.wantValue {
				t.Fatalf("value = %s, want %s", res.Value, tt.wantValue)
			}
		})
	}
	for _, v := range b.eng.Verbs() {
		if strings.HasPrefix(v, "op.") {
			t.Fatalf("named operations leaked into Verbs(): %v", b.eng.Verbs())
		}
	}
}

// 0021-D2-04 (b), 0021-D2-07: engines given one registry serve the same
// operations through the same lookup.
func TestEngine_shared_operations_registry(t *testing.T) {
	t.Parallel()
	reg := ops.NewOperations()
	var engines []*ops.Engine
	for range 2 {
		eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Operations: reg})
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, eng)
	}
	if engines[0].Operations() != reg {
		t.Fatal("the engine does not use the configured registry")
	}
	if err := reg.Register("ping", constOp(`"pong"`)); err != nil {
		t.Fatal(err)
	}
	for i, eng := range engines {
		res, err := eng.Do(context.Background(), ops.Request{ID: "p", Verb: "op.ping"})
		if err != nil || string(res.Value) != `"pong"` {
			t.Fatalf("engine %d: res %v, err %v", i, res, err)
		}
	}
}

// A named operation is registered once and served as the verb "op.NAME".
func ExampleOperations() {
	providers := ops.NewProviders(map[string]ops.Provider{scripted.Name: scripted.New()})
	reg := ops.NewOperations()
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Providers: providers, Operations: reg})
	if err != nil {
		panic(err)
	}
	shout := ops.OperationFunc(func(ctx context.Context, eng ops.Doer, req ops.Request) (*ops.Result, error) {
		res, err := eng.Do(ctx, ops.Request{ID: req.ID + "/chat", Verb: "chat", BranchID: req.BranchID, Data: req.Data})
		if err != nil {
			return nil, err
		}
		var text string
		if err := json.Unmarshal(res.Value, &text); err != nil {
			return nil, err
		}
		v, err := json.Marshal(strings.ToUpper(text))
		return &ops.Result{Value: v, BranchID: req.BranchID, Usage: res.Usage}, err
	})
	if err := reg.Register("shout", shout); err != nil {
		panic(err)
	}
	fmt.Println(reg.Register("shout", shout))
	fmt.Println(reg.Register("chat", shout, ops.WithUpdate()))

	ctx := context.Background()
	if _, err := eng.Do(ctx, ops.Request{ID: "c1", Verb: "branch.create",
		Data: json.RawMessage(`{"branch_id":"demo","chat_model":"scripted:echo"}`)}); err != nil {
		panic(err)
	}
	res, err := eng.Do(ctx, ops.Request{ID: "s1", Verb: "op.shout", BranchID: "demo",
		Data: json.RawMessage(`{"instruction":"hello"}`)})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Value))
	_, err = eng.Do(ctx, ops.Request{ID: "s2", Verb: "op.whisper"})
	fmt.Println(errors.Is(err, ops.ErrUnknownOperation), err)
	// Output:
	// ops: operation already registered: "shout" (register it WithUpdate to replace it)
	// ops: operation name is a built-in verb: "chat"
	// "HELLO"
	// true unknown_verb: unknown operation "whisper" (registered: [shout])
}
