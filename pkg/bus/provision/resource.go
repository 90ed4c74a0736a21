package provision

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Storage of the leases stream (Config.LeaseStorage).
const (
	LeasesOnFile   = "file"
	LeasesInMemory = "memory"
)

// Kind says what sort of JetStream resource a [Resource] is.
type Kind int

// Kinds of [Resource].
const (
	KindStream Kind = iota + 1
	KindConsumer
	KindBucket
	KindObjectStore
)

// String returns "stream", "consumer" or "bucket".
func (k Kind) String() string {
	switch k {
	case KindStream:
		return "stream"
	case KindConsumer:
		return "consumer"
	case KindBucket:
		return "bucket"
	case KindObjectStore:
		return "object store"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Resource names one stream, consumer or bucket that [Ensure] provisions.
type Resource struct {
	Kind Kind
	// Name is the stream's, the (durable) consumer's or the bucket's
	// name.
	Name string
	// Stream is the stream of a consumer.
	Stream string
}

// String names the resource as errors and logs do: "stream LION_OPS",
// "consumer workers on stream LION_OPS", "bucket lion_branches".
func (r Resource) String() string {
	if r.Kind == KindConsumer {
		return fmt.Sprintf("consumer %s on stream %s", r.Name, r.Stream)
	}
	return r.Kind.String() + " " + r.Name
}

// streamSpec is one stream Ensure provisions, and where its handle goes.
type streamSpec struct {
	dst *jetstream.Stream
	cfg jetstream.StreamConfig
	// storageTunable: an existing stream with the other storage is kept
	// and reported as drift (the leases stream: either storage works).
	storageTunable bool
}

// streamSpecs returns the streams of r's configuration, the requests
// stream first.
func (r *Resources) streamSpecs() []streamSpec {
	cfg, subj := r.Config, r.Subjects
	leaseStorage := jetstream.FileStorage
	if cfg.LeaseStorage == LeasesInMemory {
		leaseStorage = jetstream.MemoryStorage
	}
	return []streamSpec{
		{dst: &r.Ops, cfg: jetstream.StreamConfig{
			Name:        subj.OpsStream(),
			Description: "lionbus requests, one subject per verb",
			Subjects:    []string{subj.OpsWildcard()},
			Retention:   jetstream.WorkQueuePolicy,
			Discard:     jetstream.DiscardNew,
			MaxMsgs:     cfg.OpsMaxMsgs,
			Duplicates:  cfg.DuplicateWindow,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
		}},
		{dst: &r.Results, cfg: jetstream.StreamConfig{
			Name:              subj.ResultsStream(),
			Description:       "lionbus results and errors, one per reply subject",
			Subjects:          []string{subj.RepliesWildcard()},
			Retention:         jetstream.LimitsPolicy,
			MaxAge:            cfg.ResultsMaxAge,
			MaxMsgsPerSubject: 1,
			Duplicates:        cfg.DuplicateWindow,
			Storage:           jetstream.FileStorage,
			Replicas:          cfg.Replicas,
			AllowDirect:       true,
		}},
		{dst: &r.History, cfg: jetstream.StreamConfig{
			Name:        subj.HistoryStream(),
			Description: "lionbus branch history, the event log",
			Subjects:    []string{subj.HistoryWildcard()},
			Retention:   jetstream.LimitsPolicy,
			MaxBytes:    cfg.HistoryMaxBytes,
			Duplicates:  cfg.DuplicateWindow,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
			AllowDirect: true,
		}},
		{dst: &r.Events, cfg: jetstream.StreamConfig{
			Name:        subj.EventsStream(),
			Description: "lionbus lifecycle, message-added and hook events",
			Subjects:    []string{subj.EventsWildcard()},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      cfg.EventsMaxAge,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
		}},
		{dst: &r.Leases, storageTunable: true, cfg: jetstream.StreamConfig{
			Name:              subj.LeasesStream(),
			Description:       "lionbus branch leases: which worker runs a branch's requests",
			Subjects:          []string{subj.LeasesWildcard()},
			Retention:         jetstream.LimitsPolicy,
			MaxAge:            cfg.LeaseTTL,
			MaxMsgsPerSubject: 1,
			Duplicates:        cfg.LeaseTTL,
			Storage:           leaseStorage,
			Replicas:          cfg.Replicas,
			// A purge would take every lease from under its holder
			// unseen; workers let a lease go by deleting its message.
			DenyPurge: true,
		}},
		{dst: &r.Dead, cfg: jetstream.StreamConfig{
			Name:              subj.DeadStream(),
			Description:       "lionbus dead letters: requests that failed on every delivery or could not be answered",
			Subjects:          []string{subj.DeadLettersWildcard()},
			Retention:         jetstream.LimitsPolicy,
			Discard:           jetstream.DiscardOld,
			MaxAge:            cfg.DeadMaxAge,
			MaxMsgs:           cfg.DeadMaxMsgs,
			MaxMsgsPerSubject: 1,
			Duplicates:        cfg.DuplicateWindow,
			Storage:           jetstream.FileStorage,
			Replicas:          cfg.Replicas,
			AllowDirect:       true,
		}},
		{dst: &r.Chunks, cfg: jetstream.StreamConfig{
			Name:        subj.ChunksStream(),
			Description: "lionbus run chunks, one subject per request, replayable by sequence",
			Subjects:    []string{subj.ChunksWildcard()},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      cfg.ChunksMaxAge,
			Duplicates:  cfg.DuplicateWindow,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
			AllowDirect: true,
		}},
		{dst: &r.BatchResults, cfg: jetstream.StreamConfig{
			Name:              subj.BatchResultsStream(),
			Description:       "lionbus batch item results, the last per item, in completion order",
			Subjects:          []string{subj.BatchResultsWildcard()},
			Retention:         jetstream.LimitsPolicy,
			MaxAge:            cfg.BatchMaxAge,
			MaxMsgsPerSubject: 1,
			Duplicates:        cfg.DuplicateWindow,
			Storage:           jetstream.FileStorage,
			Replicas:          cfg.Replicas,
			AllowDirect:       true,
		}},
		{dst: &r.Journal, cfg: jetstream.StreamConfig{
			Name:              subj.JournalStream(),
			Description:       "lionbus journal of completed model calls, for the redelivery of a request that did not commit",
			Subjects:          []string{subj.JournalWildcard()},
			Retention:         jetstream.LimitsPolicy,
			MaxAge:            cfg.JournalMaxAge,
			MaxMsgsPerSubject: 1,
			Storage:           jetstream.FileStorage,
			Replicas:          cfg.Replicas,
			AllowDirect:       true,
		}},
		{dst: &r.RunLog, cfg: jetstream.StreamConfig{
			Name:        subj.RunLogStream(),
			Description: "lionbus run logs and snapshots of runs with stream_persist",
			Subjects:    []string{subj.RunLogWildcard()},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      cfg.RunLogMaxAge,
			Duplicates:  cfg.DuplicateWindow,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
			AllowDirect: true,
		}},
	}
}

// bucketSpec is one KV bucket Ensure provisions, and where its handle
// goes.
type bucketSpec struct {
	dst *jetstream.KeyValue
	cfg jetstream.KeyValueConfig
}

// bucketSpecs returns the buckets of r's configuration.
func (r *Resources) bucketSpecs() []bucketSpec {
	cfg, subj := r.Config, r.Subjects
	return []bucketSpec{
		{&r.Branches, jetstream.KeyValueConfig{
			Bucket:      subj.BranchesBucket(),
			Description: "lionbus branch snapshots",
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
		}},
		{&r.Tools, jetstream.KeyValueConfig{
			Bucket:      subj.ToolsBucket(),
			Description: "lionbus tool registry",
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
		}},
		{&r.ToolResults, jetstream.KeyValueConfig{
			Bucket:      subj.ToolResultsBucket(),
			Description: "lionbus tool results by idempotency key",
			History:     1,
			TTL:         ToolResultsMaxAge,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
		}},
		{&r.Budgets, jetstream.KeyValueConfig{
			Bucket:      subj.BudgetsBucket(),
			Description: "lionbus model budgets by model reference",
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
		}},
		{&r.BudgetMembers, jetstream.KeyValueConfig{
			Bucket:      subj.BudgetMembersBucket(),
			Description: "lionbus workers splitting the model budgets",
			History:     1,
			TTL:         BudgetMemberTTL,
			// File storage, like every other resource: a restart of the
			// server keeps the members, so the split does not change.
			Storage:  jetstream.FileStorage,
			Replicas: cfg.Replicas,
		}},
		{&r.Batches, jetstream.KeyValueConfig{
			Bucket:      subj.BatchesBucket(),
			Description: "lionbus batch records by batch id",
			History:     1,
			TTL:         cfg.BatchMaxAge,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
		}},
	}
}

// objectSpec is one object store Ensure provisions, and where its handle
// goes.
type objectSpec struct {
	dst *jetstream.ObjectStore
	cfg jetstream.ObjectStoreConfig
}

// objectSpecs returns the object stores of r's configuration.
func (r *Resources) objectSpecs() []objectSpec {
	cfg, subj := r.Config, r.Subjects
	return []objectSpec{
		{&r.BatchInput, jetstream.ObjectStoreConfig{
			Bucket:      subj.BatchInputBucket(),
			Description: "lionbus batch inputs (JSONL), by batch id",
			TTL:         cfg.BatchMaxAge,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
		}},
	}
}

// Required returns every resource of r: the streams, the workers consumer
// and the buckets, in the order Ensure provisions them.
func (r *Resources) Required() []Resource {
	var out []Resource
	for _, s := range r.streamSpecs() {
		out = append(out, Resource{Kind: KindStream, Name: s.cfg.Name})
	}
	out = append(out, r.workersResource())
	for _, b := range r.bucketSpecs() {
		out = append(out, Resource{Kind: KindBucket, Name: b.cfg.Bucket})
	}
	for _, o := range r.objectSpecs() {
		out = append(out, Resource{Kind: KindObjectStore, Name: o.cfg.Bucket})
	}
	return out
}

func (r *Resources) workersResource() Resource {
	return Resource{Kind: KindConsumer, Name: r.Subjects.WorkersConsumer(), Stream: r.Subjects.OpsStream()}
}

// Missing returns the resources of r (see [Resources.Required]) that do
// not exist: it lists the account's streams (one JetStream API request per
// 1024 of them) and looks the workers consumer up (one more). An error
// means JetStream did not answer in time (each request is bounded by
// RequestTimeout), or refused; then nothing is known to be missing. r must
// come from Ensure.
func (r *Resources) Missing(ctx context.Context) ([]Resource, error) {
	if r.js == nil {
		return nil, fmt.Errorf("%w: Missing needs Resources made by Ensure", ErrInvalidConfig)
	}
	lctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	names := r.js.StreamNames(lctx)
	have := map[string]bool{}
	for name := range names.Name() {
		have[name] = true
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("provision: list streams: %w", err)
	}
	var missing []Resource
	for _, res := range r.Required() {
		switch res.Kind {
		case KindStream:
			if !have[res.Name] {
				missing = append(missing, res)
			}
		case KindBucket:
			if !have["KV_"+res.Name] {
				missing = append(missing, res)
			}
		case KindObjectStore:
			if !have["OBJ_"+res.Name] {
				missing = append(missing, res)
			}
		case KindConsumer:
			if !have[res.Stream] {
				missing = append(missing, res)
				continue
			}
			_, err := request(ctx, func(ctx context.Context) (jetstream.ConsumerInfo, error) {
				c, err := r.js.Consumer(ctx, res.Stream, res.Name)
				if err != nil {
					return jetstream.ConsumerInfo{}, err
				}
				return *c.CachedInfo(), nil
			})
			switch {
			case errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
				missing = append(missing, res)
			case err != nil:
				return nil, fmt.Errorf("provision: %s: %w", res, err)
			}
		}
	}
	return missing, nil
}

// Unanswered returns the streams of r (buckets included) that exist but do
// not answer: in a cluster, a stream without a leader (one being elected
// after a restart) is listed by the meta leader yet cannot take a message.
// It asks each stream for its info, all at once, each bounded by
// RequestTimeout; a stream that is missing is not reported (see Missing).
// r must come from Ensure.
func (r *Resources) Unanswered(ctx context.Context) ([]Resource, error) {
	if r.js == nil {
		return nil, fmt.Errorf("%w: Unanswered needs Resources made by Ensure", ErrInvalidConfig)
	}
	var streams []Resource
	for _, res := range r.Required() {
		if res.Kind != KindConsumer {
			streams = append(streams, res)
		}
	}
	failed := make([]bool, len(streams))
	var wg sync.WaitGroup
	for i, res := range streams {
		name := res.Name
		switch res.Kind {
		case KindBucket:
			name = "KV_" + name
		case KindObjectStore:
			name = "OBJ_" + name
		}
		wg.Go(func() {
			_, err := request(ctx, func(ctx context.Context) (jetstream.Stream, error) { return r.js.Stream(ctx, name) })
			failed[i] = err != nil && !errors.Is(err, jetstream.ErrStreamNotFound)
		})
	}
	wg.Wait()
	var out []Resource
	for i, res := range streams {
		if failed[i] {
			out = append(out, res)
		}
	}
	return out, ctx.Err()
}

// Repair creates the resources of missing again, with r's configuration,
// streams before the consumer, and returns those it created: one that
// exists by now (another worker created it first) is left as it is, and
// one that exists with a conflicting configuration is reported as by
// Ensure (ErrConfigConflict). It is safe to run from several workers at
// once. since is the last moment the caller knew every resource to be
// there: a leases stream created again starts with a grace from then (see
// [LeaseGraceEnd]). The handles in r stay valid: they name the resources.
func (r *Resources) Repair(ctx context.Context, missing []Resource, since time.Time) ([]Resource, error) {
	if r.js == nil {
		return nil, fmt.Errorf("%w: Repair needs Resources made by Ensure", ErrInvalidConfig)
	}
	want := map[Resource]bool{}
	for _, res := range missing {
		want[res] = true
	}
	var created []Resource
	var errs []error
	add := func(res Resource, made bool, err error) {
		if made {
			created = append(created, res)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range r.streamSpecs() {
		res := Resource{Kind: KindStream, Name: s.cfg.Name}
		if !want[res] {
			continue
		}
		if s.cfg.Name == r.Subjects.LeasesStream() {
			s.cfg.FirstSeq = r.leaseBase(since)
		}
		_, made, _, err := ensureStream(ctx, r.js, s.cfg, s.storageTunable)
		add(res, made, err)
	}
	if res := r.workersResource(); want[res] {
		_, made, _, err := r.ensureWorkers(ctx)
		add(res, made, err)
	}
	for _, b := range r.bucketSpecs() {
		res := Resource{Kind: KindBucket, Name: b.cfg.Bucket}
		if !want[res] {
			continue
		}
		_, made, _, err := ensureBucket(ctx, r.js, b.cfg)
		add(res, made, err)
	}
	for _, o := range r.objectSpecs() {
		res := Resource{Kind: KindObjectStore, Name: o.cfg.Bucket}
		if !want[res] {
			continue
		}
		_, made, _, err := ensureObjectStore(ctx, r.js, o.cfg)
		add(res, made, err)
	}
	return created, errors.Join(errs...)
}

// leaseBaseShift is how many low bits of a lease sequence count the
// messages of its stream; the bits above hold the end of the stream's
// grace, in Unix milliseconds (see LeaseGraceEnd).
const leaseBaseShift = 20

// LeaseGrace is how long a leases stream created again hands out no new
// lease, for a lease TTL of ttl: four fifths of it. A worker that holds a
// lease lets it go (and stops the request it runs under it) once it could
// not renew it for three fifths of the TTL, so by the end of the grace no
// lease of the stream that was lost is still used; the fifth between them
// allows for clocks that differ between workers and for stopping the
// request.
func LeaseGrace(ttl time.Duration) time.Duration { return ttl * 4 / 5 }

// LeaseGraceEnd returns when the grace of the leases stream that handed out
// the lease of sequence seq ends: a worker that takes a lease (other than
// one it held, taken again) must not run requests under it before then.
//
// A leases stream lionbus creates numbers its messages from a first
// sequence whose high bits hold the end of its grace (in Unix
// milliseconds; the low 20 bits count the messages, so a stream that has
// handed out more than a million leases reads as ending its grace one
// millisecond later, long past): so every lease says whether it comes from
// a stream created a moment ago, without another request, and the
// sequences of a stream created again are all higher than those of the one
// it replaces, so no lease held before can be renewed on it. A stream
// without a grace ends it when it is created. Sequences of a stream made
// otherwise (from 1) read as a grace long past.
func LeaseGraceEnd(seq uint64) time.Time {
	return time.UnixMilli(int64(seq >> leaseBaseShift))
}

// leaseBase is the first sequence of a leases stream created now: its
// grace ends LeaseGrace after since, or now when since is zero.
func (r *Resources) leaseBase(since time.Time) uint64 {
	end := time.Now()
	if !since.IsZero() {
		ttl := r.Config.LeaseTTL
		if r.Leases != nil {
			// The stream it replaces aged leases out after its own TTL.
			if ci := r.Leases.CachedInfo(); ci != nil && ci.Config.MaxAge > ttl {
				ttl = ci.Config.MaxAge
			}
		}
		if g := since.Add(LeaseGrace(ttl)); g.After(end) {
			end = g
		}
	}
	return uint64(end.UnixMilli()) << leaseBaseShift
}
