package provision_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
)

func TestProvision_creates_everything(t *testing.T) {
	t.Parallel()
	_, js := bustest.Connect(t, bustest.NewServer(t))
	ctx := context.Background()

	r, err := provision.Ensure(ctx, js, provision.Config{Prefix: "px"})
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
		{"PX_RESULTS", "px.reply.>", jetstream.LimitsPolicy, provision.DefaultResultsMaxAge, 1},
		{"PX_HISTORY", "px.history.>", jetstream.LimitsPolicy, 0, -1},
		{"PX_EVENTS", "px.events.>", jetstream.LimitsPolicy, provision.DefaultEventsMaxAge, -1},
		{"PX_CHUNKS", "px.chunk.>", jetstream.LimitsPolicy, provision.DefaultChunksMaxAge, -1},
		{"PX_RUNLOG", "px.runlog.>", jetstream.LimitsPolicy, provision.DefaultRunLogMaxAge, -1},
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
	if d := ops.CachedInfo().Config.Duplicates; d != provision.DefaultDuplicateWindow {
		t.Errorf("PX_OPS duplicate window = %v, want %v", d, provision.DefaultDuplicateWindow)
	}
	ci, err := js.Consumer(ctx, "PX_OPS", "workers")
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	cc := ci.CachedInfo().Config
	if cc.AckPolicy != jetstream.AckExplicitPolicy || cc.AckWait != provision.DefaultAckWait ||
		cc.MaxDeliver != provision.DefaultMaxDeliver || cc.MaxAckPending != provision.DefaultMaxAckPending {
		t.Errorf("consumer config = %+v", cc)
	}
	buckets := []struct {
		name string
		ttl  time.Duration
	}{{"px_branches", 0}, {"px_tools", 0}, {"px_tool_results", provision.ToolResultsMaxAge}}
	for _, b := range buckets {
		kv, err := js.KeyValue(ctx, b.name)
		if err != nil {
			t.Errorf("bucket %s: %v", b.name, err)
			continue
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.TTL() != b.ttl || st.History() != 1 {
			t.Errorf("bucket %s: ttl %v history %d; want %v, 1", b.name, st.TTL(), st.History(), b.ttl)
		}
	}
	if r.Ops == nil || r.Results == nil || r.History == nil || r.Events == nil || r.Leases == nil || r.Dead == nil ||
		r.Workers == nil || r.Branches == nil || r.Tools == nil || r.ToolResults == nil || r.Budgets == nil || r.BudgetMembers == nil {
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

	r1, err := provision.Ensure(ctx, js, provision.Config{})
	if err != nil {
		t.Fatalf("first Provision: %v", err)
	}
	before := r1.Ops.CachedInfo().Created
	r2, err := provision.Ensure(ctx, js, provision.Config{})
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
			_, err := provision.Ensure(context.Background(), js, provision.Config{})
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
	if count != 17 { // ten streams, six KV buckets and the object store
		t.Errorf("%d streams after concurrent provisioning, want 17", count)
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
	_, err := provision.Ensure(ctx, js, provision.Config{})
	if !errors.Is(err, provision.ErrConfigConflict) {
		t.Fatalf("Provision error = %v, want ErrConfigConflict", err)
	}
	var ce *provision.ConflictError
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
	_, err := provision.Ensure(ctx, js, provision.Config{})
	var ce *provision.ConflictError
	if !errors.As(err, &ce) || ce.Resource != "stream LION_EVENTS" || ce.Field != "subjects" {
		t.Fatalf("Provision error = %v, want subjects conflict on LION_EVENTS", err)
	}
}

func TestProvision_tunable_difference_is_drift(t *testing.T) {
	t.Parallel()
	_, js := bustest.Connect(t, bustest.NewServer(t))
	ctx := context.Background()

	if _, err := provision.Ensure(ctx, js, provision.Config{ResultsMaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	r, err := provision.Ensure(ctx, js, provision.Config{ResultsMaxAge: 2 * time.Hour, AckWait: time.Minute})
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

// A bucket that exists with another max age (a tool results bucket a tool
// service created with its own window) is kept, and the difference is
// reported as drift.
func TestProvision_bucket_with_another_max_age_is_drift(t *testing.T) {
	t.Parallel()
	_, js := bustest.Connect(t, bustest.NewServer(t))
	ctx := context.Background()
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: "lion_tool_results", History: 1, TTL: time.Hour, Storage: jetstream.FileStorage,
	}); err != nil {
		t.Fatal(err)
	}
	r, err := provision.Ensure(ctx, js, provision.Config{})
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	if len(r.Drift) != 1 || !strings.Contains(r.Drift[0], "bucket lion_tool_results: max age is 1h0m0s, configured 24h0m0s") {
		t.Errorf("Drift = %q, want the tool results bucket's max age", r.Drift)
	}
	st, err := r.ToolResults.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != time.Hour {
		t.Errorf("the bucket's max age changed to %v", st.TTL())
	}
}

func TestConfig_WithDefaults_rejects_bad_values(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  provision.Config
	}{
		{"prefix", provision.Config{Prefix: "a.b"}},
		{"ack wait", provision.Config{AckWait: -time.Second}},
		{"max deliver", provision.Config{MaxDeliver: -2}},
		{"history bytes", provision.Config{HistoryMaxBytes: -5}},
		{"replicas", provision.Config{Replicas: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.cfg.WithDefaults(); !errors.Is(err, provision.ErrInvalidConfig) {
				t.Errorf("WithDefaults(%+v) = %v, want ErrInvalidConfig", tt.cfg, err)
			}
		})
	}
	c, err := provision.Config{}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Prefix != "lion" || c.MaxPayload != 1<<20 || c.HistoryMaxBytes != -1 || c.MaxDeliver != 10 {
		t.Errorf("defaults = %+v", c)
	}
}
