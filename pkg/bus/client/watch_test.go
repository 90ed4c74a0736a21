package client_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/wire"
)

func TestClient_Branches_and_Watch(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	for _, id := range []string{"w2", "w1"} {
		b.Do(t, "branch.create", "", map[string]any{"branch_id": id, "chat_model": "scripted:echo"})
	}
	b.Do(t, "communicate", "w1", map[string]any{"instruction": "before"})

	list, err := b.Client.Branches(bustest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "w1" || list[0].Events != 2 || list[1].ID != "w2" || list[1].Events != 1 {
		t.Fatalf("branches %+v", list)
	}
	// Updated is the time of each branch's last event: w1's communicate
	// came after w2's creation.
	if list[1].Updated.IsZero() || !list[0].Updated.After(list[1].Updated) {
		t.Fatalf("updated: w1 %v, w2 %v", list[0].Updated, list[1].Updated)
	}

	// From now: the next communicate's events, in order, and not the
	// earlier ones.
	var mu sync.Mutex
	var live, all []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 2)
	started := make(chan struct{})
	go func() {
		close(started)
		done <- b.Client.Watch(ctx, "w1", client.WatchOptions{}, func(ev *event.Event) error {
			mu.Lock()
			defer mu.Unlock()
			live = append(live, ev.Type())
			return nil
		})
	}()
	<-started
	time.Sleep(300 * time.Millisecond) // the watch's consumer exists
	b.Do(t, "communicate", "w1", map[string]any{"instruction": "after"})
	want := []string{"lionbus.run.start", "lionbus.message.added", "lionbus.message.added", "lionbus.run.end"}
	bustest.WaitFor(t, 10*time.Second, "the live events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(live) >= len(want)
	})
	// From the start: both communicates, until fn says stop.
	stop := errors.New("enough")
	err = b.Client.Watch(ctx, "w1", client.WatchOptions{All: true}, func(ev *event.Event) error {
		all = append(all, ev.Type())
		if len(all) == 2*len(want) {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Watch from the start: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Watch returned %v after its context ended", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(live) != len(want) {
		t.Fatalf("live events %v, want %v", live, want)
	}
	for i := range want {
		if live[i] != want[i] || all[i] != want[i] || all[len(want)+i] != want[i] {
			t.Fatalf("live %v, all %v, want %v (twice)", live, all, want)
		}
	}
	if err := b.Client.Watch(ctx, "a.b", client.WatchOptions{}, nil); !errors.Is(err, client.ErrInvalidOption) {
		t.Fatalf("bad branch: %v", err)
	}
}

// TestClient_Branches_leaves_out_deleted_branches: a branch deleted,
// whether its events were purged or not, is not listed; one deleted and
// created again is, with every event its history holds.
func TestClient_Branches_leaves_out_deleted_branches(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	for _, id := range []string{"live", "deleted", "purged", "again"} {
		bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{"branch_id": id, "chat_model": "scripted:echo"}), nil)
	}
	bustest.MustResult(t, b.Do(t, "branch.delete", "deleted", nil), nil)
	bustest.MustResult(t, b.Do(t, "branch.delete", "purged", map[string]any{"purge": true}), nil)
	bustest.MustResult(t, b.Do(t, "branch.delete", "again", nil), nil)
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{"branch_id": "again", "chat_model": "scripted:echo"}), nil)

	list, err := b.Client.Branches(bustest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []client.BranchInfo{{ID: "again", Events: 3}, {ID: "live", Events: 1}}
	if len(list) != len(want) || list[0].ID != want[0].ID || list[0].Events != want[0].Events ||
		list[1].ID != want[1].ID || list[1].Events != want[1].Events {
		t.Fatalf("branches %+v, want %+v", list, want)
	}

	// Pages of one: the deleted branch between "again" and "live" is
	// skipped within the page, not answered as an empty one.
	var paged []string
	after := ""
	for range 5 {
		res, err := b.Client.BranchList(bustest.Ctx(t), wire.BranchListRequest{After: after, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, br := range res.Value.Branches {
			paged = append(paged, br.ID)
		}
		if len(res.Value.Branches) > 1 || res.Value.More && len(res.Value.Branches) == 0 {
			t.Fatalf("page after %q: %+v", after, res.Value)
		}
		if !res.Value.More {
			break
		}
		after = res.Value.Next
	}
	if strings.Join(paged, " ") != "again live" {
		t.Fatalf("pages of one: %q, want again, live", paged)
	}
}
