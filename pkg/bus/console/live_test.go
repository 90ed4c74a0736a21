package console_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/console"
)

// TestLive_streams_are_bounded: MaxLiveClients streams are served at
// at once; one more is answered 503.
func TestLive_streams_are_bounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.create(t, "busy", []string{"ok"})
	open := func() (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/branches/busy/live", nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res, func() { cancel(); res.Body.Close() }
	}
	var closers []context.CancelFunc
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := range console.MaxLiveClients {
		res, closeIt := open()
		closers = append(closers, closeIt)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream %d: %d %s", i, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
	res, closeIt := open()
	closeIt()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("stream %d: %d, want 503", console.MaxLiveClients+1, res.StatusCode)
	}
}
