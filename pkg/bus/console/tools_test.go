package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/wire"
)

// toolsServed starts a server with two replicas of a tool service
// "orders" (lookup answers, except for id "missing": not_found) and a
// registry entry no service answers (ghost), and serves a console; it
// returns the fixture and an invoker.
func toolsServed(t *testing.T) (*fixture, *tools.Invoker) {
	t.Helper()
	b := bustest.New(t, provision.Config{})
	cfg := tools.ServiceConfig{Prefix: b.Cfg.Prefix, Name: "orders", Version: "2.1.0", Tools: []tools.Tool{{
		Name: "lookup", Description: "Looks an order up by id.", Version: "2.1.0",
		Parameters: []byte(`{"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}`),
		Handler: func(_ context.Context, a map[string]any) (any, error) {
			if a["id"] == "missing" {
				return nil, tools.Errorf("not_found", "no order %v", a["id"])
			}
			return map[string]any{"id": a["id"], "state": "shipped"}, nil
		},
	}}}
	for range 2 {
		nc, _ := bustest.Connect(t, b.Srv)
		svc, err := tools.Serve(bustest.Ctx(t), nc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = svc.Stop(ctx)
		})
	}
	kv, err := b.JS.KeyValue(bustest.Ctx(t), b.Cfg.Prefix+"_tools")
	if err != nil {
		t.Fatal(err)
	}
	ghost := `{"name": "ghost", "description": "Nobody serves this.", "parameters": {"type": "object"}, "subject": "` + b.Cfg.Prefix + `.tool.ghost"}`
	if _, err := kv.Put(bustest.Ctx(t), "ghost", []byte(ghost)); err != nil {
		t.Fatal(err)
	}
	inv, err := tools.NewInvoker(b.NC, tools.InvokerConfig{Prefix: b.Cfg.Prefix, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cl, u := serveConsole(t, b)
	return &fixture{b: b, url: u, cl: cl}, inv
}

// lookup calls the tool lookup with id, under a fresh key.
func lookup(t *testing.T, inv *tools.Invoker, id string, n int) {
	t.Helper()
	key := fmt.Sprintf("console-%s-%d", id, n)
	if _, err := inv.Invoke(bustest.Ctx(t), wire.ToolInvocation{Function: "lookup", Arguments: map[string]any{"id": id}, IdempotencyKey: key, RequestID: key}); err != nil {
		t.Fatal(err)
	}
}

// The tools page lists the registry by name, each tool with the services
// answering it, their requests, error answers, latest error and recent
// latency; a tool no service answers says so.
func TestPages_tools(t *testing.T) {
	t.Parallel()
	f, inv := toolsServed(t)
	for i, id := range []string{"a-1", "a-2", "missing"} {
		lookup(t, inv, id, i)
	}
	status, body := f.get(t, "/tools")
	if status != http.StatusOK {
		t.Fatalf("tools: %d %s", status, body)
	}
	if miss, ok := ordered(body, "2 registered tools", "2 services answered STATS",
		`data-name="ghost" data-instances="0" data-requests="0" data-errors="0"`, "Nobody serves this.", "no service answered STATS",
		`data-name="lookup" data-instances="2" data-requests="3" data-errors="1"`, "Looks an order up by id.", `&#34;required&#34;: [`, "2.1.0",
		"2 instances", "<code>orders</code>", "<code>orders</code>", "not_found: no order missing"); !ok {
		t.Fatalf("the tools page lacks %q (or has it out of order):\n%s", miss, body)
	}
	if strings.Count(body, `class="instance"`) != 2 {
		t.Fatalf("want 2 instance rows:\n%s", body)
	}
}

func TestBrowser_tools_figures_move_without_reload(t *testing.T) {
	f, inv := toolsServed(t)
	lookup(t, inv, "a-1", 0)
	ctx := browser(t)
	row := `document.querySelector('tr.tool-row[data-name="lookup"]')`
	do(t, ctx, chromedp.Navigate(f.url+"/tools?refresh=1"), until(row+`.dataset.requests === "1"`))
	do(t, ctx, chromedp.Click(`tr.tool-row[data-name="lookup"] td:nth-child(4) summary`))
	marker := eval[bool](t, ctx, `(window.sameDocument = true)`)
	lookup(t, inv, "missing", 1)
	lookup(t, inv, "a-2", 2)
	do(t, ctx, until(row+`.dataset.requests === "3" && `+row+`.dataset.errors === "1"`))
	if !marker || !eval[bool](t, ctx, `window.sameDocument === true`) {
		t.Fatal("the page was reloaded, not updated in place")
	}
	if !eval[bool](t, ctx, row+`.querySelector("td:nth-child(4) details").open`) {
		t.Fatal("the instances the reader opened were closed by the update")
	}
	screenshot(t, ctx, "tools")
}
