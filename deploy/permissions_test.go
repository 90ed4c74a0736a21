package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
	"github.com/lionbus/lionbus/pkg/wire"
)

// tenantPasswords are the variables tenants.conf reads, set to a test
// password each (the variable's name in lower case).
var tenantPasswords = []string{
	"LIONBUS_WORKER_ACME_PASSWORD", "LIONBUS_WORKER_GLOBEX_PASSWORD", "LIONBUS_TOOL_WEATHER_PASSWORD",
	"ACME_ALICE_PASSWORD", "ACME_CAROL_PASSWORD", "GLOBEX_GUS_PASSWORD", "NATS_SYS_PASSWORD",
}

// password is the test password of the variable v.
func password(v string) string { return "test-" + strings.ToLower(v) }

// startConfServer starts a real nats-server from the configuration file
// conf, with the variables it reads set, on a random loopback port, without
// monitoring or cluster, storing JetStream in a temp dir.
func startConfServer(t *testing.T, conf string, vars []string) *server.Server {
	t.Helper()
	env := make(map[string]string, len(vars))
	for _, v := range vars {
		env[v] = password(v)
	}
	return bustest.NewConfServer(t, conf, env)
}

// probe is a connection of one user whose asynchronous errors (the
// server's permission violations) are collected.
type probe struct {
	t    *testing.T
	user string
	nc   *nats.Conn
	mu   sync.Mutex
	errs []string
}

// connectProbe connects as user (password from the variable pwVar) with
// the inbox prefix inbox.
func connectProbe(t *testing.T, s *server.Server, user, pwVar, inbox string) *probe {
	t.Helper()
	p := &probe{t: t, user: user}
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(user, password(pwVar)), nats.CustomInboxPrefix(inbox),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			p.mu.Lock()
			p.errs = append(p.errs, err.Error())
			p.mu.Unlock()
		}))
	if err != nil {
		t.Fatalf("connect %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	p.nc = nc
	return p
}

// refused waits for the server to report a permissions violation of kind
// ("Publish" or "Subscription") on subject.
func (p *probe) refused(kind, subject string) bool {
	want := strings.ToLower("permissions violation for " + kind + ` to "` + subject + `"`)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		for _, e := range p.errs {
			if strings.Contains(strings.ToLower(e), want) {
				p.mu.Unlock()
				return true
			}
		}
		p.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// cannotSubscribe checks that the server refuses p's subscription to
// subject.
func (p *probe) cannotSubscribe(subject string) {
	p.t.Helper()
	sub, err := p.nc.SubscribeSync(subject)
	if err != nil {
		p.t.Fatalf("%s: subscribe %s: %v", p.user, subject, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = p.nc.Flush()
	if !p.refused("Subscription", subject) {
		p.t.Errorf("%s may subscribe to %s; want it refused", p.user, subject)
	}
}

// cannotPublish checks that the server refuses p's publish on subject.
func (p *probe) cannotPublish(subject string) {
	p.t.Helper()
	if err := p.nc.Publish(subject, []byte("{}")); err != nil {
		p.t.Fatalf("%s: publish %s: %v", p.user, subject, err)
	}
	_ = p.nc.Flush()
	if !p.refused("Publish", subject) {
		p.t.Errorf("%s may publish on %s; want it refused", p.user, subject)
	}
}

// startTenantWorker starts a real lionbus worker for prefix, connected as
// worker-<prefix> with its private inbox prefix.
func startTenantWorker(t *testing.T, s *server.Server, prefix string, tools ops.Invoker) *bus.Service {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pwVar := "LIONBUS_WORKER_" + strings.ToUpper(prefix) + "_PASSWORD"
	svc, err := bus.Start(ctx, bus.Config{
		Connect: client.ConnectConfig{
			URL: s.ClientURL(), User: "worker-" + prefix, Password: password(pwVar),
			InboxPrefix: "_INBOX_worker_" + prefix, Name: "worker-" + prefix,
		},
		Provision: provision.Config{Prefix: prefix},
		Worker:    worker.Config{FetchWait: 200 * time.Millisecond},
		Tools:     tools,
	})
	if err != nil {
		t.Fatalf("start worker %s: %v", prefix, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
		svc.Close()
	})
	return svc
}

// tenantAPIPrefix is where tenants.conf imports the JetStream API of their
// results stream.
const tenantAPIPrefix = "lionbus.api"

// tenantClient is a lionbus client of a tenant user.
func tenantClient(t *testing.T, s *server.Server, user, pwVar, prefix string) (*client.Client, *nats.Conn) {
	t.Helper()
	nc, err := client.Connect(context.Background(), client.ConnectConfig{
		URL: s.ClientURL(), User: user, Password: password(pwVar), InboxPrefix: "_INBOX." + user, Name: user,
	})
	if err != nil {
		t.Fatalf("connect %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	cl, err := client.New(nc, client.Config{Prefix: prefix, APIPrefix: tenantAPIPrefix, Timeout: 10 * time.Second, AwaitTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return cl, nc
}

// collect subscribes nc to subject and returns what it received so far.
func collect(t *testing.T, nc *nats.Conn, subject string) func() []*nats.Msg {
	t.Helper()
	var mu sync.Mutex
	var got []*nats.Msg
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) { mu.Lock(); got = append(got, m); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() []*nats.Msg {
		mu.Lock()
		defer mu.Unlock()
		return append([]*nats.Msg(nil), got...)
	}
}

// do runs one request and fails the test unless it is answered with a
// result.
func do(t *testing.T, cl *client.Client, verb, branch string, data any, opts ...client.SubmitOption) *client.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := cl.Do(ctx, verb, branch, data, opts...)
	if err != nil {
		t.Fatalf("%s %s: %v", verb, branch, err)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("%s %s answered %v", verb, branch, err)
	}
	return r
}

// TestTenants_permissions starts nats-server from nats/tenants.conf, the
// workers of the tenants acme and globex and acme's tool service, and
// checks each rule of deploy/README.md ("Users, permissions and tenants")
// for the client, the tool service, the worker and the second tenant: what
// is allowed works, what is forbidden is refused by the server.
func TestTenants_permissions(t *testing.T) {
	s := startConfServer(t, "nats/tenants.conf", tenantPasswords)

	// acme's worker invokes tools through a connection of its own user and
	// inbox, as cmd/worker does.
	invNC, err := client.Connect(context.Background(), client.ConnectConfig{
		URL: s.ClientURL(), User: "worker-acme", Password: password("LIONBUS_WORKER_ACME_PASSWORD"),
		InboxPrefix: "_INBOX_worker_acme", Name: "worker-acme tools",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(invNC.Close)
	inv, err := tools.NewInvoker(invNC, tools.InvokerConfig{Prefix: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	acmeWorker := startTenantWorker(t, s, "acme", inv)
	globexWorker := startTenantWorker(t, s, "globex", nil)

	// The tool results bucket, which tool-weather may not create, was made
	// by the worker's provisioning.
	if _, err := acmeWorker.JetStream().KeyValue(context.Background(), tools.ResultsBucket("acme")); err != nil {
		t.Fatalf("the tool results bucket after the worker's provisioning: %v", err)
	}

	alice, aliceNC := tenantClient(t, s, "alice", "ACME_ALICE_PASSWORD", "acme")
	gus, gusNC := tenantClient(t, s, "gus", "GLOBEX_GUS_PASSWORD", "globex")
	aliceEvents := collect(t, aliceNC, "acme.events.>")
	gusEvents := collect(t, gusNC, "globex.events.>")
	gusAnswers := collect(t, gusNC, "globex.reply.>")

	// Both tenants name a branch "shared": each gets its own.
	branch := map[string]any{"branch_id": "shared", "system": "be brief", "chat_model": "scripted:echo"}
	do(t, alice, "branch.create", "", branch)
	aliceID := uuid.NewString()
	aliceReply := do(t, alice, "communicate", "shared", map[string]any{"instruction": "acme secret"}, client.WithID(aliceID))

	t.Run("client/request answered end to end, answer stored and readable", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The answer reaches its subscriber as the results stream takes
		// it: the stored copy may be readable a moment later.
		var r *client.Reply
		var err error
		waitFor(t, "the stored answer", func() bool {
			r, err = alice.Result(ctx, aliceID)
			return !errors.Is(err, client.ErrNoResult)
		})
		if err != nil {
			t.Fatalf("Result: %v", err)
		}
		if r.Type != aliceReply.Type || string(r.Data) != string(aliceReply.Data) {
			t.Errorf("stored answer %s %s, want %s %s", r.Type, r.Data, aliceReply.Type, aliceReply.Data)
		}
	})
	t.Run("client/events of its tenant", func(t *testing.T) {
		waitFor(t, "acme events", func() bool { return len(aliceEvents()) > 0 })
	})
	t.Run("client/cancel of its tenant reaches its workers", func(t *testing.T) {
		w := connectProbe(t, s, "worker-acme", "LIONBUS_WORKER_ACME_PASSWORD", "_INBOX_worker_acme")
		cancels := collect(t, w.nc, "acme.cancel.>")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		id := uuid.NewString()
		if err := alice.Cancel(ctx, id); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		waitFor(t, "the cancel", func() bool {
			got := cancels()
			return len(got) == 1 && got[0].Subject == "acme.cancel."+id
		})
	})
	t.Run("client/refused", func(t *testing.T) {
		p := connectProbe(t, s, "alice", "ACME_ALICE_PASSWORD", "_INBOX.alice")
		for _, subj := range []string{"_INBOX.>", "_INBOX.carol.>", "_INBOX_worker_acme.>", "acme.ops.>", "acme.history.>", "acme.tool.>", ">"} {
			p.cannotSubscribe(subj)
		}
		for _, subj := range []string{
			"acme.reply." + aliceID,  // forge an answer
			"acme.history.shared",    // write history
			"acme.events.shared.x",   // forge an event
			"acme.tool.weather",      // invoke a tool
			"_INBOX_worker_acme.x.1", // forge a tool result
			"$KV.acme_tools.weather", // replace a registry entry
			"$JS.API.STREAM.PURGE.ACME_HISTORY",
			"$JS.API.STREAM.DELETE.ACME_OPS",
			"$JS.API.CONSUMER.MSG.NEXT.ACME_OPS.workers",
			"lionbus.api.STREAM.INFO.ACME_HISTORY", // read history
			"lionbus.api.DIRECT.GET.ACME_HISTORY.acme.history.shared",
		} {
			p.cannotPublish(subj)
		}
	})
	t.Run("client/another client's inbox, verbs granted one by one", func(t *testing.T) {
		carol := connectProbe(t, s, "carol", "ACME_CAROL_PASSWORD", "_INBOX.carol")
		carol.cannotSubscribe("_INBOX.alice.>")
		// carol's grant names verbs: she may read a branch, not delete it.
		carol.cannotPublish("acme.ops.branch.delete")
		carol.cannotPublish("acme.ops.branch.clone")
		// carol's requests work with her own inbox.
		_, carolNC := tenantClient(t, s, "carol", "ACME_CAROL_PASSWORD", "acme")
		carolCl, err := client.New(carolNC, client.Config{Prefix: "acme", APIPrefix: tenantAPIPrefix})
		if err != nil {
			t.Fatal(err)
		}
		do(t, carolCl, "branch.get", "shared", nil)
	})

	t.Run("tool service/its own tool answered, registered", func(t *testing.T) {
		toolNC := connectProbe(t, s, "tool-weather", "LIONBUS_TOOL_WEATHER_PASSWORD", "_INBOX_tool_weather")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		svc, err := tools.Serve(ctx, toolNC.nc, tools.ServiceConfig{
			Compile: toolschema.Compile, Name: "weather", Version: "1.0.0", Prefix: "acme",
			Tools: []tools.Tool{{Name: "weather", Description: "the weather", Handler: func(context.Context, map[string]any) (any, error) {
				return map[string]any{"sky": "clear"}, nil
			}}},
		})
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		defer func() { _ = svc.Stop(context.Background()) }()
		out, err := inv.Invoke(ctx, ops.ToolInvocation{Function: "weather", IdempotencyKey: "k1", RequestID: "r1"})
		if err != nil || out.Error != nil {
			t.Fatalf("Invoke = %+v, %v", out, err)
		}
		if m, _ := out.Output.(map[string]any); m["sky"] != "clear" {
			t.Errorf("output %v", out.Output)
		}
	})
	t.Run("tool service/refused", func(t *testing.T) {
		p := connectProbe(t, s, "tool-weather", "LIONBUS_TOOL_WEATHER_PASSWORD", "_INBOX_tool_weather")
		for _, subj := range []string{"acme.tool.forecast", "acme.tool.>", "acme.ops.>", "acme.reply.>", "_INBOX_worker_acme.>", "globex.tool.weather"} {
			p.cannotSubscribe(subj)
		}
		for _, subj := range []string{
			"_INBOX_worker_acme.x.1", // a tool result nobody asked it for
			"$KV.acme_tools.forecast",
			"$KV.acme_tool_results.forecast.k",
			"$JS.API.DIRECT.GET.KV_acme_tools.$KV.acme_tools.forecast",
			"$JS.API.STREAM.PURGE.KV_acme_tools",
			"$JS.API.STREAM.DELETE.ACME_HISTORY",
			"acme.reply.x",
			"acme.history.shared",
		} {
			p.cannotPublish(subj)
		}
		// Serving another tool fails.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if svc, err := tools.Serve(ctx, p.nc, tools.ServiceConfig{
			Compile: toolschema.Compile, Name: "weather", Version: "1.0.0", Prefix: "acme", ResultWindow: -1,
			Tools: []tools.Tool{{Name: "forecast", Handler: func(context.Context, map[string]any) (any, error) { return nil, nil }}},
		}); err == nil {
			_ = svc.Stop(context.Background())
			t.Error("Serve of a tool the user does not own succeeded")
		}
	})

	t.Run("worker/refused", func(t *testing.T) {
		p := connectProbe(t, s, "worker-acme", "LIONBUS_WORKER_ACME_PASSWORD", "_INBOX_worker_acme")
		for _, subj := range []string{"_INBOX.>", "_INBOX.alice.>", "_INBOX_worker_globex.>", "globex.>", "globex.ops.>"} {
			p.cannotSubscribe(subj)
		}
		for _, subj := range []string{"globex.history.shared", "globex.reply.x", "globex.ops.communicate", "$KV.globex_tools.weather", "_INBOX.alice.x"} {
			p.cannotPublish(subj)
		}
	})
	t.Run("worker/a replyto into another tenant goes nowhere", func(t *testing.T) {
		before := len(gusAnswers())
		do(t, alice, "branch.get", "shared", nil, client.WithReplyTo("globex.reply.forged"))
		time.Sleep(300 * time.Millisecond)
		for _, m := range gusAnswers()[before:] {
			t.Errorf("globex received %s from acme's worker", m.Subject)
		}
	})

	t.Run("worker/a tool entry naming another tenant's subject goes nowhere", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The tool service may write its own entry, with any subject.
		p := connectProbe(t, s, "tool-weather", "LIONBUS_TOOL_WEATHER_PASSWORD", "_INBOX_tool_weather")
		js, err := jetstream.New(p.nc)
		if err != nil {
			t.Fatal(err)
		}
		kv, err := js.KeyValue(ctx, "acme_tools")
		if err != nil {
			t.Fatal(err)
		}
		entry, _ := json.Marshal(tools.Entry{Name: "weather", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`), Subject: "globex.ops.communicate"})
		if _, err := kv.Put(ctx, "weather", entry); err != nil {
			t.Fatalf("put its own entry: %v", err)
		}
		ops0 := streamMsgs(t, globexWorker.JetStream(), "GLOBEX_OPS")
		reg, err := tools.OpenRegistry(ctx, acmeWorker.JetStream(), "acme", zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = reg.Close() }()
		waitFor(t, "the entry", func() bool {
			e, err := reg.Lookup(ctx, "weather")
			return err == nil && e.Subject == "globex.ops.communicate"
		})
		regInv, err := tools.NewInvoker(invNC, tools.InvokerConfig{Prefix: "acme", Registry: reg, Timeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		out, err := regInv.Invoke(ctx, ops.ToolInvocation{Function: "weather", IdempotencyKey: "k2", RequestID: "r2"})
		if err == nil {
			t.Fatalf("Invoke through another tenant's subject = %+v, want an error", out)
		}
		t.Logf("Invoke: %v", err)
		time.Sleep(200 * time.Millisecond)
		if n := streamMsgs(t, globexWorker.JetStream(), "GLOBEX_OPS"); n != ops0 {
			t.Errorf("GLOBEX_OPS went from %d to %d messages: acme's worker wrote into globex", ops0, n)
		}
	})
	t.Run("second tenant/its own branch, request answered", func(t *testing.T) {
		// globex has no branch "shared": acme's is not visible.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := gus.Do(ctx, "branch.get", "shared", nil)
		if err != nil {
			t.Fatal(err)
		}
		var re *client.RemoteError
		if err := r.Err(); !errors.As(err, &re) || re.Code != ops.CodeBranchNotFound {
			t.Fatalf("globex branch.get shared = %v, want branch_not_found", r.Err())
		}
		do(t, gus, "branch.create", "", branch)
		do(t, gus, "communicate", "shared", map[string]any{"instruction": "globex"})
		for _, m := range gusEvents() {
			if !strings.HasPrefix(m.Subject, "globex.events.") {
				t.Errorf("globex received event %s", m.Subject)
			}
		}
		for _, m := range aliceEvents() {
			if !strings.HasPrefix(m.Subject, "acme.events.") {
				t.Errorf("acme received event %s", m.Subject)
			}
		}
	})
	t.Run("second tenant/branch lists of each tenant's own branches", func(t *testing.T) {
		// Neither client may read a history stream: the list comes from
		// the tenant's workers (branch.list), so each sees its own
		// "shared", and only it; carol may not ask for the list at all.
		do(t, alice, "branch.create", "", map[string]any{"branch_id": "acme-only", "chat_model": "scripted:echo"})
		for _, tc := range []struct {
			name string
			cl   *client.Client
			want string
		}{{"alice", alice, "acme-only shared"}, {"gus", gus, "shared"}} {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			list, err := tc.cl.Branches(ctx)
			cancel()
			if err != nil {
				t.Fatalf("%s's branch list: %v", tc.name, err)
			}
			var ids []string
			for _, b := range list {
				ids = append(ids, b.ID)
			}
			if got := strings.Join(ids, " "); got != tc.want {
				t.Errorf("%s's branches %q, want %q", tc.name, got, tc.want)
			}
		}
		carol := connectProbe(t, s, "carol", "ACME_CAROL_PASSWORD", "_INBOX.carol")
		carol.cannotPublish("acme.ops.branch.list")
	})
	t.Run("second tenant/refused", func(t *testing.T) {
		p := connectProbe(t, s, "gus", "GLOBEX_GUS_PASSWORD", "_INBOX.gus")
		for _, subj := range []string{"acme.reply.>", "acme.events.>", "acme.chunk.>", "_INBOX.alice.>", "_INBOX_worker_acme.>"} {
			p.cannotSubscribe(subj)
		}
		for _, subj := range []string{"acme.ops.branch.get", "acme.cancel." + aliceID, "lionbus.api.STREAM.INFO.ACME_RESULTS", "lionbus.api.DIRECT.GET.ACME_RESULTS.acme.reply." + aliceID} {
			p.cannotPublish(subj)
		}
		// Nothing of acme reaches globex's account even where its
		// permissions would allow it: it has no import of acme's subjects.
		for _, m := range gusAnswers() {
			if !strings.HasPrefix(m.Subject, "globex.reply.") {
				t.Errorf("globex received answer %s", m.Subject)
			}
		}
	})
}

// streamMsgs is how many messages the stream name has received (its last
// sequence: the work queue LION_OPS deletes what it has delivered).
func streamMsgs(t *testing.T, js jetstream.JetStream, name string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// waitFor fails the test unless cond holds within 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSingleAccount_permissions starts nats-server from nats/nats.conf
// (without its cluster) and a worker with the user worker, and checks the
// rules of one account: the client's request is answered end to end
// through its own inbox, the worker's inbox and the client's are private,
// and the client can neither take requests, forge answers or tool results,
// nor change streams or the tool registry.
func TestSingleAccount_permissions(t *testing.T) {
	vars := []string{"LIONBUS_WORKER_PASSWORD", "LIONBUS_CLIENT_PASSWORD", "LIONBUS_TOOLS_PASSWORD", "NATS_SYS_PASSWORD"}
	s := startConfServer(t, "nats/nats.conf", vars)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := bus.Start(ctx, bus.Config{
		Connect: client.ConnectConfig{
			URL: s.ClientURL(), User: "worker", Password: password("LIONBUS_WORKER_PASSWORD"), InboxPrefix: "_INBOX_worker",
		},
		Worker: worker.Config{FetchWait: 200 * time.Millisecond},
	})
	if err != nil {
		t.Fatalf("start the worker: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
		svc.Close()
	})

	nc, err := client.Connect(ctx, client.ConnectConfig{
		URL: s.ClientURL(), User: "client", Password: password("LIONBUS_CLIENT_PASSWORD"), InboxPrefix: "_INBOX.client",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cl, err := client.New(nc, client.Config{Timeout: 10 * time.Second, AwaitTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	inbox := collect(t, nc, "_INBOX.client.answers")

	t.Run("client/request answered, stored answer read, answer in its inbox", func(t *testing.T) {
		id := uuid.NewString()
		do(t, cl, "branch.create", "", map[string]any{"branch_id": "b1", "chat_model": "scripted:echo"},
			client.WithID(id), client.WithReplyTo("_INBOX.client.answers"))
		if _, err := cl.Result(ctx, id); err != nil {
			t.Fatalf("Result: %v", err)
		}
		waitFor(t, "the answer in the client's inbox", func() bool { return len(inbox()) == 1 })
	})
	t.Run("client/batch submitted, watched, results read", func(t *testing.T) {
		var in strings.Builder
		for i := range 10 {
			in.WriteString(`{"custom_id": "c` + string(rune('0'+i)) + `", "verb": "chat", "data": {"instruction": "hi", "chat_model": "scripted:echo"}}` + "\n")
		}
		if _, err := cl.SubmitBatch(ctx, client.BatchSpec{ID: "perm"}, strings.NewReader(in.String())); err != nil {
			t.Fatalf("SubmitBatch: %v", err)
		}
		var last *wire.Batch
		if err := cl.WatchBatch(ctx, "perm", func(b *wire.Batch) error { last = b; return nil }); err != nil {
			t.Fatalf("WatchBatch: %v", err)
		}
		if last.Counts.Succeeded != 10 {
			t.Fatalf("batch ended %+v", last)
		}
		n := 0
		if err := cl.BatchResults(ctx, "perm", 0, false, func(wire.BatchResult) error { n++; return nil }); err != nil || n != 10 {
			t.Fatalf("BatchResults: %d, %v", n, err)
		}
		if list, err := cl.Batches(ctx); err != nil || len(list) != 1 {
			t.Fatalf("Batches: %v, %v", list, err)
		}
		if _, err := cl.RetryBatch(ctx, "perm"); err != nil {
			t.Fatalf("RetryBatch: %v", err)
		}
	})
	t.Run("client/refused", func(t *testing.T) {
		p := connectProbe(t, s, "client", "LIONBUS_CLIENT_PASSWORD", "_INBOX.client")
		// Run logs, in any directory (0021-D5-06), are no client's to read.
		for _, subj := range []string{"_INBOX.>", "_INBOX_worker.>", "lion.ops.>", "lion.history.>", "lion.tool.>",
			"lion.runlog.>", "lion.runlog.default.>", "lion.runlog.audit.>"} {
			p.cannotSubscribe(subj)
		}
		for _, subj := range []string{"lion.reply.x", "lion.history.b1", "_INBOX_worker.x.1", "$KV.lion_tools.x",
			"$JS.API.STREAM.PURGE.LION_HISTORY", "$JS.API.STREAM.DELETE.LION_OPS", "$JS.API.CONSUMER.MSG.NEXT.LION_OPS.workers",
			"lion.runlog.audit.x.snapshot", "$JS.API.STREAM.PURGE.LION_RUNLOG",
			"lion.batch.result.perm.x", "$JS.API.STREAM.PURGE.LION_BATCH_RESULTS", "$JS.API.STREAM.DELETE.KV_lion_batches"} {
			p.cannotPublish(subj)
		}
	})
	t.Run("client/plain inbox refused", func(t *testing.T) {
		p := connectProbe(t, s, "client", "LIONBUS_CLIENT_PASSWORD", "_INBOX")
		p.cannotSubscribe("_INBOX.x")
	})
	t.Run("worker/refused", func(t *testing.T) {
		p := connectProbe(t, s, "worker", "LIONBUS_WORKER_PASSWORD", "_INBOX_worker")
		for _, subj := range []string{"_INBOX.>", "_INBOX.client.>", ">"} {
			p.cannotSubscribe(subj)
		}
		for _, subj := range []string{"other.ops.x", "$KV.other.x", "$SYS.REQ.SERVER.PING"} {
			p.cannotPublish(subj)
		}
	})
}
