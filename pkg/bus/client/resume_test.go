package client_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/lionbus/lionbus/pkg/ops"
)

// pausingModel streams three chunks, waits until resume is closed, then
// streams three more.
type pausingModel struct {
	paused chan struct{}
	resume chan struct{}
	once   sync.Once
}

func (m *pausingModel) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	return &ops.Completion{Text: "one two three four five six"}, nil
}

func (m *pausingModel) Stream(ctx context.Context, call ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
	words := []string{"one ", "two ", "three ", "four ", "five ", "six"}
	for i, w := range words {
		if i == 3 {
			m.once.Do(func() { close(m.paused) })
			select {
			case <-m.resume:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if err := emit(ops.Chunk{Kind: ops.ChunkText, Content: w, IsDelta: i > 0}); err != nil {
			return nil, err
		}
	}
	return &ops.Completion{Text: "one two three four five six"}, nil
}

// The server is shut down and started again in place (same port, same
// store) while a client follows a streamed communicate and another watches
// the branch's events: the follower gets every chunk once, in order, with
// no gap across the restart, then the answer; the watcher gets the events
// of the requests before and after the restart, each once.
func TestClient_follow_and_watch_resume_after_a_server_restart(t *testing.T) {
	t.Parallel()
	port := bustest.FreePorts(t, 1)[0]
	dir := t.TempDir()
	start := func() *embedded.Server {
		srv, err := embedded.Start(bustest.Ctx(t), embedded.Config{Port: port, StoreDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start()
	defer func() { srv.Shutdown() }()

	model := &pausingModel{paused: make(chan struct{}), resume: make(chan struct{})}
	svc, err := bus.Start(bustest.Ctx(t), bus.Config{
		Connect:   client.ConnectConfig{URL: srv.ClientURL()},
		Providers: bustest.Providers(t, map[string]ops.Provider{"pause": model}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
		svc.Close()
	}()
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cl, err := client.New(nc, client.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := bustest.Ctx(t)
	if r, err := cl.Do(ctx, "branch.create", "", map[string]any{"branch_id": "rs", "chat_model": "pause:x"}); err != nil || r.Err() != nil {
		t.Fatalf("branch.create: %v %v", err, r)
	}

	var mu sync.Mutex
	var watched []string // event ids
	wctx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- cl.Watch(wctx, "rs", client.WatchOptions{All: true}, func(ev *event.Event) error {
			mu.Lock()
			defer mu.Unlock()
			watched = append(watched, ev.ID())
			return nil
		})
	}()
	if r, err := cl.Do(ctx, "communicate", "rs", map[string]any{"instruction": "before"}); err != nil || r.Err() != nil {
		t.Fatalf("communicate: %v %v", err, r)
	}

	var seqs []uint64
	var text string
	followed := make(chan error, 1)
	go func() {
		_, reply, err := cl.Stream(ctx, "communicate", "rs", map[string]any{"instruction": "streamed", "stream": true}, func(c ops.Chunk) error {
			seqs = append(seqs, c.Seq)
			text += c.Content
			return nil
		})
		if err == nil {
			err = reply.Err()
		}
		followed <- err
	}()
	<-model.paused
	time.Sleep(200 * time.Millisecond) // the first chunks are followed
	srv.Shutdown()
	srv = start()
	bustest.WaitFor(t, 20*time.Second, "the worker back", func() bool { return svc.Ready(ctx) == nil })
	close(model.resume)
	if err := <-followed; err != nil {
		t.Fatalf("follow across the restart: %v", err)
	}
	want := []uint64{}
	for i := range len(seqs) {
		want = append(want, uint64(i+1))
	}
	if !slices.Equal(seqs, want) || text != "one two three four five six" {
		t.Errorf("chunks %v %q, want seqs from 1 without gap or repeat and the whole text", seqs, text)
	}

	if r, err := cl.Do(ctx, "communicate", "rs", map[string]any{"instruction": "after"}); err != nil || r.Err() != nil {
		t.Fatalf("communicate after the restart: %v %v", err, r)
	}
	// Three communicates: run start, two message-added, run end each.
	bustest.WaitFor(t, 10*time.Second, "every event watched", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(watched) >= 12
	})
	time.Sleep(200 * time.Millisecond)
	stopWatch()
	if err := <-watchDone; err != nil {
		t.Errorf("watch ended with %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]int{}
	for _, id := range watched {
		seen[id]++
	}
	if len(watched) != 12 || len(seen) != 12 {
		t.Errorf("watched %d events, %d distinct, want 12 each once: %v", len(watched), len(seen), watched)
	}
}
