package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set, the worker exports its spans over
// OTLP/HTTP to that collector (here a local HTTP server), at the latest
// when it stops.
func TestRun_exports_spans_over_OTLP_when_configured(t *testing.T) {
	var mu sync.Mutex
	var posts []string
	var bytes int
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		buf := make([]byte, 1<<20)
		n, _ := r.Body.Read(buf)
		posts = append(posts, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		bytes += n
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")

	srv := bustest.NewServer(t)
	stdout, stderr, stop := runWorker(t, "--nats", srv.ClientURL(), "--log-level", "info", "--log-format", "json")
	waitFor(t, 30*time.Second, "the worker to start", func() bool {
		return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
	})
	nc, _ := bustest.Connect(t, srv)
	cl, err := client.New(nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.Do(ctx, "branch.create", "", map[string]any{"branch_id": "o", "chat_model": "scripted:echo"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Do(ctx, "communicate", "o", map[string]any{"instruction": "hi"}); err != nil {
		t.Fatal(err)
	}
	if code := stop(); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(posts) == 0 || !strings.HasPrefix(posts[0], "POST /v1/traces application/x-protobuf") || bytes == 0 {
		t.Fatalf("collector saw %v (%d bytes)", posts, bytes)
	}
	if !strings.Contains(stderr.String(), "exporting spans over OTLP") {
		t.Error("no log line says tracing is on")
	}
}
