package console_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
)

// tenantsConf is the multi-tenant server configuration of deploy/.
const tenantsConf = "../../../deploy/nats/tenants.conf"

// tenantPassword is the test password of a tenants.conf variable.
func tenantPassword(v string) string { return "test-" + strings.ToLower(v) }

// tenantServer starts nats-server from tenantsConf with a password for
// each of its users.
func tenantServer(t *testing.T) *server.Server {
	env := map[string]string{}
	for _, v := range []string{
		"LIONBUS_WORKER_ACME_PASSWORD", "LIONBUS_WORKER_GLOBEX_PASSWORD", "LIONBUS_TOOL_WEATHER_PASSWORD",
		"ACME_ALICE_PASSWORD", "ACME_CAROL_PASSWORD", "GLOBEX_GUS_PASSWORD", "NATS_SYS_PASSWORD",
	} {
		env[v] = tenantPassword(v)
	}
	return bustest.NewConfServer(t, tenantsConf, env)
}

// tenantWorker starts the workers of tenant prefix as tenants.conf's
// worker-<prefix>, until the test ends.
func tenantWorker(t *testing.T, s *server.Server, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := bus.Start(ctx, bus.Config{
		Connect: client.ConnectConfig{
			URL: s.ClientURL(), User: "worker-" + prefix,
			Password:    tenantPassword("LIONBUS_WORKER_" + strings.ToUpper(prefix) + "_PASSWORD"),
			InboxPrefix: "_INBOX_worker_" + prefix, Name: "worker-" + prefix,
		},
		Provision: provision.Config{Prefix: prefix},
		Worker:    worker.Config{FetchWait: 200 * time.Millisecond},
	})
	if err != nil {
		t.Fatalf("start the workers of %s: %v", prefix, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
		svc.Close()
	})
}

// tenantUser connects as a client user of tenants.conf, with its own
// inbox, the tenant's prefix and the imported JetStream API.
func tenantUser(t *testing.T, s *server.Server, user, prefix string) *client.Client {
	t.Helper()
	pw := tenantPassword(strings.ToUpper(prefix) + "_" + strings.ToUpper(user) + "_PASSWORD")
	nc, err := client.Connect(context.Background(), client.ConnectConfig{
		URL: s.ClientURL(), User: user, Password: pw, InboxPrefix: "_INBOX." + user, Name: user,
	})
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	cl, err := client.New(nc, client.Config{Prefix: prefix, APIPrefix: "lionbus.api", Timeout: 10 * time.Second, AwaitTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// tenantBranch makes branch id as cl's user, its scripted model answering
// replies, and records one exchange on it.
func tenantBranch(t *testing.T, cl *client.Client, id, instruction string, replies ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, step := range []struct {
		verb, branch string
		data         map[string]any
	}{
		{"branch.create", "", map[string]any{"branch_id": id, "system": "You are terse.", "chat_model": chatReply(replies...)}},
		{"communicate", id, map[string]any{"instruction": instruction}},
	} {
		r, err := cl.Do(ctx, step.verb, step.branch, step.data)
		if err == nil {
			err = r.Err()
		}
		if err != nil {
			t.Fatalf("%s %s as a tenant: %v", step.verb, id, err)
		}
	}
}

// TestBrowser_tenant_user_sees_only_its_branches: on the multi-tenant
// setup of deploy/nats/tenants.conf, a console on alice's credentials
// (tenant acme) lists acme's branches and shows their conversations, and
// never globex's: not in the list, not by search, not by its URL. gus's
// console (globex) sees the reverse. Neither user may read the history
// stream; the list comes from the tenant's own workers (branch.list).
func TestBrowser_tenant_user_sees_only_its_branches(t *testing.T) {
	s := tenantServer(t)
	tenantWorker(t, s, "acme")
	tenantWorker(t, s, "globex")
	alice := tenantUser(t, s, "alice", "acme")
	gus := tenantUser(t, s, "gus", "globex")
	tenantBranch(t, alice, "acme-plans", "Plan the launch.", "Launch on Monday.")
	tenantBranch(t, gus, "globex-secret", "Keep this quiet.", "The merger is on.")
	tenantBranch(t, gus, "shared", "globex's own shared", "globex answer")
	tenantBranch(t, alice, "shared", "acme's own shared", "acme answer", "a second acme answer")

	aliceURL := serveClient(t, alice)
	gusURL := serveClient(t, gus)
	ctx := browser(t)

	do(t, ctx, chromedp.Navigate(aliceURL+"/branches"), chromedp.WaitVisible(chromedp.CSS(`table.list`)))
	rows := eval[[]string](t, ctx, rowsJS)
	if strings.Join(rows, " ") != "shared acme-plans" {
		t.Fatalf("alice's branch list %q, want acme's two branches only", rows)
	}
	html := eval[string](t, ctx, `document.body.innerText`)
	if strings.Contains(html, "globex") {
		t.Fatalf("alice's branch list shows globex: %s", html)
	}
	screenshot(t, ctx, "branches-tenant")

	// Searching for the other tenant's branch finds nothing.
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#q`), "globex\r"))
	arrived(t, ctx, `location.search === "?q=globex" && document.readyState === "complete"`)
	if rows := eval[[]string](t, ctx, rowsJS); len(rows) != 0 {
		t.Fatalf("alice's search for globex: %q", rows)
	}

	// alice's "shared" is acme's conversation, not globex's branch of the
	// same name.
	do(t, ctx, chromedp.Navigate(aliceURL+"/branches/shared"), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
	page := eval[string](t, ctx, `document.body.innerText`)
	if !strings.Contains(page, "acme's own shared") || !strings.Contains(page, "acme answer") || strings.Contains(page, "globex") {
		t.Fatalf("alice's branch shared:\n%s", page)
	}

	// The page follows acme's branch live: alice needs no JetStream grant
	// for it, the events come on acme.events.>.
	do(t, ctx, until(`document.querySelector(".live-status").textContent === "live"`))
	r, err := alice.Do(t.Context(), "communicate", "shared", map[string]any{"instruction": "a second acme question"})
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		t.Fatal(err)
	}
	do(t, ctx, until(`document.getElementById("timeline").textContent.includes("a second acme question")`))

	// Naming globex's branch in the URL: acme's workers do not know it.
	resp, err := http.Get(aliceURL + "/branches/globex-secret")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "merger") {
		t.Fatalf("alice's /branches/globex-secret: %d\n%s", resp.StatusCode, body)
	}

	// And gus sees globex's, not acme's.
	do(t, ctx, chromedp.Navigate(gusURL+"/branches"), chromedp.WaitVisible(chromedp.CSS(`table.list`)))
	if rows := eval[[]string](t, ctx, rowsJS); strings.Join(rows, " ") != "shared globex-secret" {
		t.Fatalf("gus's branch list %q, want globex's two branches only", rows)
	}
}
