package bus_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/ops"
)

func TestProvision_creates_everything(t *testing.T) {
	t.Parallel()
	_, js := bustest.Connect(t, bustest.NewServer(t))
	ctx := context.Background()

	r, err := bus.Provision(ctx, js, bus.Config{Prefix: "px"})
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	if len(r.Drift) != 0 {
		t.Errorf("Drift on fresh server = %v", r.Drift)
	}
	tests := []struct {
		stream    string
		subject   string
		retention jetstream.RetentionPolicy
		maxAge    time.Duration
		perSubj   int64
	}{
		{"PX_OPS", "px.ops.>", jetstream.WorkQueuePolicy, 0, -1},
		{"PX_RESULTS", "px.reply.>", jetstream.LimitsPolicy, bus.DefaultResultsMaxAge, 1},
		{"PX_HISTORY", "px.history.>", jetstream.LimitsPolicy, 0, -1},
		{"PX_EVENTS", "px.events.>", jetstream.LimitsPolicy, bus.DefaultEventsMaxAge, -1},
	}
	for _, tt := range tests {
		st, err := js.Stream(ctx, tt.stream)
		if err != nil {
			t.Fatalf("stream %s: %v", tt.stream, err)
		}
		c := st.CachedInfo().Config
		if !slices.Equal(c.Subjects, []string{tt.subject}) || c.Retention != tt.retention ||
			c.MaxAge != tt.maxAge || c.MaxMsgsPerSubject != tt.perSubj {
			t.Errorf("stream %s: subjects %v retention %v max age %v per subject %d; want %s %v %v %d",
				tt.stream, c.Subjects, c.Retention, c.MaxAge, c.MaxMsgsPerSubject,
				tt.subject, tt.retention, tt.maxAge, tt.perSubj)
		}
	}
	ops, _ := js.Stream(ctx, "PX_OPS")
	if d := ops.CachedInfo().Config.Duplicates; d != bus.DefaultDuplicateWindow {
		t.Errorf("PX_OPS duplicate window = %v, want %v", d, bus.DefaultDuplicateWindow)
	}
	ci, err := js.Consumer(ctx, "PX_OPS", "workers")
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	cc := ci.CachedInfo().Config
	if cc.AckPolicy != jetstream.AckExplicitPolicy || cc.AckWait != bus.DefaultAckWait ||
		cc.MaxDeliver != bus.DefaultMaxDeliver || cc.MaxAckPending != bus.DefaultMaxAckPending {
		t.Errorf("consumer config = %+v", cc)
	}
	for _, b := range []string{"px_branches", "px_tools"} {
		if _, err := js.KeyValue(ctx, b); err != nil {
			t.Errorf("bucket %s: %v", b, err)
		}
	}
	if r.Ops == nil || r.Results == nil || r.History == nil || r.Events == nil ||
		r.Workers == nil || r.Branches == nil || r.Tools == nil {
		t.Errorf("Resources has nil handles: %+v", r)
	}
	if r.Subjects.Prefix != "px" {
		t.Errorf("Subjects.Prefix = %q", r.Subjects.Prefix)
	}
}

func TestProvision_twice_is_a_noop(t *testing.T) {
	t.Parallel()
	_, js := bustest.Connect(t, bustest.NewServer(t))
	ctx := context.Background()

	r1, err := bus.Provision(ctx, js, bus.Config{})
	if err != nil {
		t.Fatalf("first Provision: %v", err)
	}
	before := r1.Ops.CachedInfo().Created
	r2, err := bus.Provision(ctx, js, bus.Config{})
	if err != nil {
		t.Fatalf("second Provision: %v", err)
	}
	if len(r2.Drift) != 0 {
		t.Errorf("second Provision drift = %v", r2.Drift)
	}
	if got := r2.Ops.CachedInfo().Created; !got.Equal(before) {
		t.Errorf("LION_OPS recreated: created %v, was %v", got, before)
	}
}

func TestProvision_concurrent_workers(t *testing.T) {
	t.Parallel()
	_, js := bustest.Connect(t, bustest.NewServer(t))
	const n = 4
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := bus.Provision(context.Background(), js, bus.Config{})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Provision: %v", err)
		}
	}
	names := js.StreamNames(context.Background())
	count := 0
	for range names.Name() {
		count++
	}
	if count != 6 { // four streams and two KV buckets
		t.Errorf("%d streams after concurrent provisioning, want 6", count)
	}
}

func TestProvision_conflicting_stream_is_reported_and_kept(t *testing.T) {
	t.Parallel()
	_, js := bustest.Connect(t, bustest.NewServer(t))
	ctx := context.Background()

	orig := jetstream.StreamConfig{
		Name:      "LION_OPS",
		Subjects:  []string{"lion.ops.>"},
		Retention: jetstream.LimitsPolicy,
	}
	if _, err := js.CreateStream(ctx, orig); err != nil {
		t.Fatal(err)
	}
	_, err := bus.Provision(ctx, js, bus.Config{})
	if !errors.Is(err, bus.ErrConfigConflict) {
		t.Fatalf("Provision error = %v, want ErrConfigConflict", err)
	}
	var ce *bus.ConflictError
	if !errors.As(err, &ce) || ce.Resource != "stream LION_OPS" || ce.Field != "retention" {
		t.Fatalf("conflict = %#v, want stream LION_OPS retention", ce)
	}
	if !strings.Contains(err.Error(), "LION_OPS") {
		t.Errorf("message %q does not name the stream", err)
	}
	st, err := js.Stream(ctx, "LION_OPS")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().Config.Retention; got != jetstream.LimitsPolicy {
		t.Errorf("stream retention changed to %v", got)
	}
}

func TestProvision_conflicting_subjects(t *testing.T) {
	t.Parallel()
	_, js := bustest.Connect(t, bustest.NewServer(t))
	ctx := context.Background()

	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     "LION_EVENTS",
		Subjects: []string{"lion.events.only.>"},
	}); err != nil {
		t.Fatal(err)
	}
	_, err := bus.Provision(ctx, js, bus.Config{})
	var ce *bus.ConflictError
	if !errors.As(err, &ce) || ce.Resource != "stream LION_EVENTS" || ce.Field != "subjects" {
		t.Fatalf("Provision error = %v, want subjects conflict on LION_EVENTS", err)
	}
}

func TestProvision_tunable_difference_is_drift(t *testing.T) {
	t.Parallel()
	_, js := bustest.Connect(t, bustest.NewServer(t))
	ctx := context.Background()

	if _, err := bus.Provision(ctx, js, bus.Config{ResultsMaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	r, err := bus.Provision(ctx, js, bus.Config{ResultsMaxAge: 2 * time.Hour, AckWait: time.Minute})
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	if len(r.Drift) != 2 {
		t.Fatalf("Drift = %q, want max age and ack wait", r.Drift)
	}
	if got := r.Results.CachedInfo().Config.MaxAge; got != time.Hour {
		t.Errorf("results max age changed to %v", got)
	}
}

func TestConfig_WithDefaults_rejects_bad_values(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  bus.Config
	}{
		{"prefix", bus.Config{Prefix: "a.b"}},
		{"ack wait", bus.Config{AckWait: -time.Second}},
		{"max deliver", bus.Config{MaxDeliver: -2}},
		{"history bytes", bus.Config{HistoryMaxBytes: -5}},
		{"replicas", bus.Config{Replicas: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.cfg.WithDefaults(); !errors.Is(err, bus.ErrInvalidConfig) {
				t.Errorf("WithDefaults(%+v) = %v, want ErrInvalidConfig", tt.cfg, err)
			}
		})
	}
	c, err := bus.Config{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Prefix != "lion" || c.MaxPayload != 1<<20 || c.HistoryMaxBytes != -1 || c.MaxDeliver != 10 {
		t.Errorf("defaults = %+v", c)
	}
}

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
			ctx := testCtx(t)
			if tt.preexist {
				r, err := bus.Provision(ctx, js, bus.Config{})
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
			r, err := bus.Provision(ctx, js, bus.Config{})
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
			st, err := bus.NewStore(js, r, bus.StoreConfig{})
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
			if err != nil || len(evs) != 2 || evs[0].Type != ops.EventCreated {
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
