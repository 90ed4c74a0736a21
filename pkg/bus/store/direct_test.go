package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/nats-io/nats.go/jetstream"
)

// TestProvision_direct_get covers the read path of the history and results
// streams: they are created with direct gets allowed, and streams created
// without them (by an earlier version) are drift, left as they are, and
// still serve the store and answer lookups through the JetStream API.
func TestProvision_direct_get(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		preexist  bool // HISTORY and RESULTS exist without AllowDirect
		wantDrift int
	}{
		{"fresh", false, 0},
		{"earlier streams without direct get", true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, js := bustest.Connect(t, bustest.NewServer(t))
			ctx := bustest.Ctx(t)
			if tt.preexist {
				r, err := provision.Ensure(ctx, js, provision.Config{})
				if err != nil {
					t.Fatal(err)
				}
				for _, st := range []jetstream.Stream{r.History, r.Results} {
					cfg := st.CachedInfo().Config
					if err := js.DeleteStream(ctx, cfg.Name); err != nil {
						t.Fatal(err)
					}
					cfg.AllowDirect = false
					if _, err := js.CreateStream(ctx, cfg); err != nil {
						t.Fatal(err)
					}
				}
			}
			r, err := provision.Ensure(ctx, js, provision.Config{})
			if err != nil {
				t.Fatalf("Provision: %v", err)
			}
			var drift []string
			for _, d := range r.Drift {
				if strings.Contains(d, "allow direct") {
					drift = append(drift, d)
				}
			}
			if len(drift) != tt.wantDrift || len(r.Drift) != tt.wantDrift {
				t.Fatalf("Drift = %q, want %d allow-direct entries", r.Drift, tt.wantDrift)
			}
			for _, st := range []jetstream.Stream{r.History, r.Results} {
				info, err := st.Info(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := info.Config.AllowDirect, !tt.preexist; got != want {
					t.Errorf("stream %s AllowDirect = %v, want %v", info.Config.Name, got, want)
				}
			}

			// The store reads history with GetLastMsgForSubject and GetMsg
			// either way.
			st, err := store.New(js, r, store.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Create(ctx, "d", createdEvent("c", "sys")); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := st.Append(ctx, "d", messagesEvent(fmt.Sprintf("r%d", i), fmt.Sprint(i))); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Branches.Delete(ctx, "d"); err != nil {
				t.Fatal(err)
			}
			b, err := st.Load(ctx, "d")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(instructions(b), ","); got != "0,1,2" {
				t.Errorf("rebuilt branch has instructions %q, want 0,1,2", got)
			}
			evs, err := st.History(ctx, "d", 0, 2)
			if err != nil || len(evs) != 2 || evs[0].Type != history.EventCreated {
				t.Errorf("History = %d events, %v", len(evs), err)
			}

			// A stored answer is found by subject.
			if _, err := js.Publish(ctx, r.Subjects.Reply("q1"), []byte("first")); err != nil {
				t.Fatal(err)
			}
			if _, err := js.Publish(ctx, r.Subjects.Reply("q1"), []byte("second")); err != nil {
				t.Fatal(err)
			}
			m, err := r.Results.GetLastMsgForSubject(ctx, r.Subjects.Reply("q1"))
			if err != nil || string(m.Data) != "second" {
				t.Fatalf("stored answer = %v, %v; want second", m, err)
			}
			if _, err := r.Results.GetLastMsgForSubject(ctx, r.Subjects.Reply("q2")); !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Errorf("missing answer: err = %v, want ErrMsgNotFound", err)
			}
		})
	}
}
