package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

// wireSchemas compiles the tool protocol's schemas (schemas/tools), by
// event type.
func wireSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	dir := filepath.Join("..", "..", "schemas", "tools")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("schemas in %s: %v", dir, err)
	}
	c := jsonschema.NewCompiler()
	const base = "https://lionbus.github.io/schemas/tools/"
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.AddResource(base+filepath.Base(f), doc); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, f := range files {
		name := filepath.Base(f)
		s, err := c.Compile(base + name)
		if err != nil {
			t.Fatalf("compile %s: %v", name, err)
		}
		out[name[:len(name)-len(".json")]] = s
	}
	return out
}

// Every event the SDK, the invoker and the policy put on the wire is a
// CloudEvent whose data matches its schema in schemas/tools, and the
// registry entry matches tool.entry.json: the protocol a tool service in
// another language follows.
func TestWire_events_match_the_documented_schemas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sch := wireSchemas(t)
	g := newGate()
	b.serve(t, tools.ServiceConfig{Compile: toolschema.Compile, Name: "wire", Tools: []tools.Tool{echoTool("a"), {Name: "hang", Handler: g.hang}}})

	var mu sync.Mutex
	var seen []*nats.Msg
	snoop := b.conn(t)
	for _, subj := range []string{"lion.tool.>", "lion.approve.>", "_INBOX.>"} {
		if _, err := snoop.Subscribe(subj, func(m *nats.Msg) {
			mu.Lock()
			seen = append(seen, m)
			mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := snoop.Flush(); err != nil {
		t.Fatal(err)
	}
	approver := b.conn(t)
	if _, err := approver.Subscribe("lion.approve.echo", func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"allow": true}`))
	}); err != nil {
		t.Fatal(err)
	}

	inv := b.invoker(t, b.registry(t))
	ctx := bustest.Ctx(t)
	if _, err := inv.Invoke(ctx, call("echo", map[string]any{"text": "hi"}, "w/0")); err != nil {
		t.Fatal(err)
	}
	if _, err := inv.Invoke(ctx, call("echo", nil, "w/1")); err != nil {
		t.Fatal(err)
	}
	hctx, cancel := context.WithCancel(ctx)
	go func() { <-g.started; cancel() }()
	_, _ = inv.Invoke(hctx, call("hang", nil, "w/2"))
	waitChan(t, g.ended, 10*time.Second, "the hanging handler to end")
	p := &tools.Policy{Approve: true, Conn: b.nc}
	if d, err := p.Authorize(ctx, call("echo", map[string]any{"text": "ok?"}, "w/3")); err != nil || !d.Allow {
		t.Fatalf("approval: %+v %v", d, err)
	}
	bustest.WaitFor(t, 10*time.Second, "the snoop to see the approver's answer", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range seen {
			if string(m.Data) == `{"allow": true}` {
				return true
			}
		}
		return false
	})
	kv, err := b.js.KeyValue(ctx, "lion_tools")
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	check := func(typ string, data []byte) {
		t.Helper()
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s data: %v", typ, err)
		}
		if err := sch[typ].Validate(v); err != nil {
			t.Errorf("%s data %s: %v", typ, data, err)
		}
	}
	check("tool.entry", e.Value())

	mu.Lock()
	defer mu.Unlock()
	counts := map[string]int{}
	for _, m := range seen {
		var ev struct {
			SpecVersion string          `json:"specversion"`
			Type        string          `json:"type"`
			Data        json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil || ev.SpecVersion == "" {
			if string(m.Data) == `{"allow": true}` {
				check("lionbus.tool.approval.result", m.Data)
				counts["plain approval"]++
				continue
			}
			continue // micro's own traffic
		}
		if _, ok := sch[ev.Type]; !ok {
			t.Errorf("event of undocumented type %s on %s", ev.Type, m.Subject)
			continue
		}
		check(ev.Type, ev.Data)
		counts[ev.Type]++
	}
	for _, typ := range []string{"lionbus.tool.invoke", "lionbus.tool.result", "lionbus.tool.cancel", "lionbus.tool.approval.request", "plain approval"} {
		if counts[typ] == 0 {
			t.Errorf("no %s seen on the wire (seen %v)", typ, counts)
		}
	}
}

// The SDK's own error codes, listed in schemas/tools/lionbus.tool.result.json
// ($defs/sdk_code, from which other languages' SDKs get theirs), are the
// codes this package answers.
func TestWire_sdk_codes_match_the_result_schema(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "schemas", "tools", "lionbus.tool.result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs struct {
			Code struct {
				Enum []string `json:"enum"`
			} `json:"sdk_code"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{tools.CodeInvalidArguments, tools.CodeBadInvocation, tools.CodeTimeout, tools.CodeCanceled, tools.CodeBusy, ops.ToolErrorFailed}
	if !slices.Equal(doc.Defs.Code.Enum, want) {
		t.Fatalf("lionbus.tool.result.json $defs/sdk_code/enum is %v, the SDK answers %v", doc.Defs.Code.Enum, want)
	}
}
