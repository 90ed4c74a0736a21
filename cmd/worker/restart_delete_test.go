package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
)

// Each stream, the workers consumer and each bucket is deleted in turn
// under a running worker process: its /readyz answers 503 naming what is
// missing, the worker creates it again with the configured settings (the
// probe made it look: its periodic check is an hour away here), /readyz
// answers 200 again, and the worker serves requests that use it (a branch
// created, a communicate, a run with stream_persist) within 5s of the
// deletion, logging one line per resource it created again and nothing
// else. For the requests stream and the consumer, the worker's one slot is
// held by a request meanwhile, so that no fetch of it notices the loss
// first.
func TestRestart_each_resource_deleted_under_a_running_worker(t *testing.T) {
	srv := bustest.NewServer(t)
	model := newModelServer(t, 0)
	w := startMainProcess(t, "w1", "--nats", srv.ClientURL(), "--metrics-addr", "127.0.0.1:0", "--health-interval", "1h",
		"--concurrency", "1", "--log-level", "info", "--request-log-level", "debug", "--openai-base-url", model.baseURL(),
		"--cli", "fake="+clitest.Build(t))
	_, js := bustest.Connect(t, srv)
	res := bustest.Provision(t, js, provision.Config{})
	cfg := res.Config
	_, cl := reconnectingClient(t, srv.ClientURL())
	openai := map[string]any{"provider": "openai", "model": "m"}
	waitFor(t, 10*time.Second, "ready", func() bool { return w.readyz() == http.StatusOK })

	for i, r := range res.Required() {
		t.Run(r.String(), func(t *testing.T) {
			busy := r.Kind == provision.KindConsumer || r.Name == res.Subjects.OpsStream()
			holdID := fmt.Sprintf("hold-%d", i)
			if busy {
				// (A branch of its own: an earlier round may have deleted
				// the history.)
				if r, err := doUntil(t, cl, time.Now().Add(20*time.Second), "branch.create", "",
					map[string]any{"branch_id": holdID, "chat_model": openai}, "create-"+holdID); err != nil || r.Err() != nil {
					t.Fatalf("branch.create: %v %v", err, r)
				}
				if _, err := cl.Submit(bustest.Ctx(t), "communicate", holdID, map[string]any{"instruction": "say hold/" + holdID},
					client.WithID(holdID)); err != nil {
					t.Fatal(err)
				}
				waitFor(t, 10*time.Second, "the held call", func() bool { return model.callsOf("hold/"+holdID) == 1 })
			}
			gone := []provision.Resource{r}
			if r.Name == res.Subjects.OpsStream() {
				gone = append(gone, provision.Resource{Kind: provision.KindConsumer, Name: res.Subjects.WorkersConsumer(), Stream: r.Name})
			}
			deleted := time.Now()
			bustest.DeleteResource(t, js, r)
			if code, body := readyzBody(t, w); code != http.StatusServiceUnavailable || !strings.Contains(body, r.String()+" missing") &&
				!strings.Contains(body, r.String()+", ") {
				t.Errorf("/readyz with %s deleted: %d %q, want 503 naming it", r, code, body)
			}
			waitFor(t, 5*time.Second, "/readyz 200 again", func() bool { return w.readyz() == http.StatusOK })
			if busy {
				model.release()
				if r, err := cl.Await(bustest.Ctx(t), holdID); err != nil || r.Err() != nil {
					t.Fatalf("the held request: %v %v", err, r)
				}
			}

			// Served again: what each resource is for.
			branch := fmt.Sprintf("d-%d", i)
			until := deleted.Add(20 * time.Second)
			var firstServed time.Duration
			for _, req := range []struct {
				verb, branch string
				data         map[string]any
			}{
				{"branch.create", "", map[string]any{"branch_id": branch, "chat_model": openai}},
				{"communicate", branch, map[string]any{"instruction": "say " + branch + "/c"}},
			} {
				r, err := doUntil(t, cl, until, req.verb, req.branch, req.data, branch+"-"+strings.ReplaceAll(req.verb, ".", "_"))
				if err != nil || r.Err() != nil {
					t.Fatalf("%s after the deletion: %v %v\n%s", req.verb, err, r, w.logs)
				}
				if firstServed == 0 {
					firstServed = time.Since(deleted)
				}
			}
			var chunks int
			if _, reply, err := cl.Stream(bustest.Ctx(t), "run", branch, map[string]any{"instruction": "run", "chat_model": "cli:fake",
				"stream_persist": true}, func(ops.Chunk) error { chunks++; return nil }); err != nil || reply.Err() != nil || chunks == 0 {
				t.Fatalf("run after the deletion: %v %v, %d chunks", err, reply, chunks)
			}
			served := time.Since(deleted)
			t.Logf("%s deleted: first request served %s after, all three %s after", r, firstServed.Round(time.Millisecond), served.Round(time.Millisecond))
			if firstServed > 5*time.Second {
				t.Errorf("served again %s after %s was deleted, want within 5s", firstServed, r)
			}

			// As configured, and nothing else missing.
			again, err := provision.Ensure(bustest.Ctx(t), js, cfg)
			if err != nil || len(again.Drift) != 0 {
				t.Errorf("after the re-creation: %v, drift %q", err, again.Drift)
			}
			// One line per resource created again, nothing else.
			lines := w.logs.between(deleted, time.Now().Add(time.Second))
			created := 0
			for _, l := range lines {
				var rec struct{ Level, Message string }
				if err := json.Unmarshal([]byte(l), &rec); err != nil {
					t.Fatalf("log line %q: %v", l, err)
				}
				if strings.HasSuffix(rec.Message, "did not exist; created it again") {
					created++
				} else {
					t.Errorf("logged %s: %s", rec.Level, rec.Message)
				}
			}
			if created != len(gone) {
				t.Errorf("%d lines about re-creations, want %d (%v):\n%s", created, len(gone), gone, strings.Join(lines, "\n"))
			}
		})
	}
}

// readyzBody returns the status and body of the worker's /readyz.
func readyzBody(t *testing.T, p *mainProcess) (int, string) {
	t.Helper()
	addr := p.logs.field("metrics and health on /metrics, /healthz, /readyz", "addr")
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
