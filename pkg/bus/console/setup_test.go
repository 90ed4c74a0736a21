package console_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/console"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

// fixture is an embedded server with a worker (the real engine, the
// scripted model, two tools) and a console serving on a loopback port.
type fixture struct {
	b   *bustest.Bus
	url string // the console's base URL
	// gate answers the tool "wait": each call blocks until a value is
	// sent on it (or the call's context ends).
	gate chan struct{}
	cl   *client.Client // the console's own client
}

// newFixture starts the fixture; everything stops when the test ends.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	b := bustest.New(t, provision.Config{})
	gate := make(chan struct{})
	tools := opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, a map[string]any) (any, error) {
			x, _ := a["x"].(float64)
			y, _ := a["y"].(float64)
			return map[string]any{"sum": x + y}, nil
		},
		"explode": func(context.Context, map[string]any) (any, error) {
			return nil, errors.New("the fuse blew")
		},
		"wait": func(ctx context.Context, _ map[string]any) (any, error) {
			select {
			case <-gate:
				return map[string]any{"waited": true}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	b.StartServiceWith(t, nil, nil, nil, worker.Config{}, func(c *bus.Config) {
		c.Tools = tools
		c.Logger = bustest.Logger(t)
	})

	cl, url := serveConsole(t, b)
	return &fixture{b: b, url: url, gate: gate, cl: cl}
}

// chatReply is a scripted model that answers text.
func chatReply(text ...string) map[string]any {
	return map[string]any{"provider": "scripted", "replies": text}
}

// create makes a branch with a system message, the scripted model
// answering replies, and tools.
func (f *fixture) create(t *testing.T, id string, replies []string, tools ...string) {
	t.Helper()
	data := map[string]any{"branch_id": id, "system": "You are terse.", "chat_model": chatReply(replies...)}
	if len(tools) > 0 {
		data["tools"] = tools
	}
	bustest.MustResult(t, f.b.Do(t, "branch.create", "", data), nil)
}

// communicated makes branch id and runs one communicate on it.
func (f *fixture) communicated(t *testing.T, id, instruction, reply string) {
	t.Helper()
	f.create(t, id, []string{reply})
	bustest.MustResult(t, f.b.Do(t, "communicate", id, map[string]any{"instruction": instruction}), nil)
}

// operated makes branch id and runs an operate whose model asks for add
// (answered) and explode (failing).
func (f *fixture) operated(t *testing.T, id string) {
	t.Helper()
	reply := `{"answer": "done", "action_required": true, "action_requests": [` +
		`{"function": "add", "arguments": {"x": 20, "y": 22}}, {"function": "explode", "arguments": {"when": "now"}}]}`
	f.create(t, id, []string{reply}, "add", "explode")
	format := map[string]any{"title": "Work", "type": "object",
		"properties": map[string]any{"answer": map[string]any{"type": "string"}}, "required": []string{"answer"}}
	bustest.MustResult(t, f.b.Do(t, "operate", id, map[string]any{
		"instruction": "add 20 and 22, then explode", "response_format": format, "actions": true,
	}), nil)
}

// get fetches path from the console and returns its status and body.
func (f *fixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	res, err := http.Get(f.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// ordered reports whether each of want occurs in s after the one before.
func ordered(s string, want ...string) (missing string, ok bool) {
	for _, w := range want {
		i := strings.Index(s, w)
		if i < 0 {
			return w, false
		}
		s = s[i+len(w):]
	}
	return "", true
}

// serveConsole serves a console on a loopback port, reading b through a
// client of its own connection as publisher console does, until the test
// ends; it returns that client and the console's base URL.
func serveConsole(t *testing.T, b *bustest.Bus, opts ...console.Option) (*client.Client, string) {
	t.Helper()
	nc, _ := bustest.Connect(t, b.Srv)
	cl, err := client.New(nc, client.Config{Prefix: b.Cfg.Prefix, Timeout: 10 * time.Second, AwaitTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return cl, serveClient(t, cl, opts...)
}

// serveClient serves the console of cl on a loopback port until the test
// ends and returns its base URL.
func serveClient(t *testing.T, cl *client.Client, opts ...console.Option) string {
	t.Helper()
	srv, err := console.New(cl, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("console: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// post posts form to path with the headers, not following the redirect,
// and returns the status and the redirect's location (nil for none).
func (f *fixture) post(t *testing.T, path string, form url.Values, header map[string]string) (int, *url.URL) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc, err := res.Location()
	if err != nil {
		return res.StatusCode, nil
	}
	return res.StatusCode, loc
}
