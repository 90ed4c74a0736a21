// Package provision creates the streams, the shared consumer and the KV
// buckets lionbus runs on, and checks existing ones: see [Ensure].
package provision

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// Defaults of [Config].
const (
	DefaultAckWait         = 5 * time.Second
	DefaultDeadMaxAge      = 7 * 24 * time.Hour
	DefaultDeadMaxMsgs     = 10_000
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultEventsMaxAge    = 24 * time.Hour
	DefaultLeaseTTL        = 5 * time.Second
	// DefaultMaxAckPending is sized for I/O-bound requests: a model
	// answering in seconds keeps a request delivered that long, so the
	// fleet's requests in flight are bounded by it, not by the workers'
	// slots (156 workers of 64, or 9 of 1,024). What it costs the server
	// is an entry per pending message; each worker still takes no more
	// than its own slots.
	DefaultMaxAckPending = 10_000
	DefaultMaxDeliver    = 10
	DefaultMaxPayload    = protocol.DefaultMaxPayload // 1 MiB
	DefaultOpsMaxMsgs    = 100_000
	DefaultReplicas      = 1
	DefaultResultsMaxAge = 24 * time.Hour
	DefaultChunksMaxAge  = time.Hour
	DefaultRunLogMaxAge  = 7 * 24 * time.Hour
	// DefaultJournalMaxAge is how long a completed model call of a
	// request that has not committed yet is kept for its redelivery: the
	// longest a request runs (15 min) and its deliveries' ack waits, with
	// room to spare.
	DefaultJournalMaxAge = time.Hour
	DefaultBatchMaxAge   = 7 * 24 * time.Hour
)

// ToolResultsMaxAge is the max age of the tool results bucket when Ensure
// creates it: the tool SDK's default window of remembered results. Tool
// services would create the bucket themselves; creating it here gives it
// the configured replicas, so that losing a server does not lose it.
const ToolResultsMaxAge = 24 * time.Hour

// BudgetMemberTTL is how long a worker's entry in the budget members
// bucket lives without a heartbeat: a worker that died stops counting in
// the fleet's split of every budget within it.
const BudgetMemberTTL = 3 * time.Second

// RequestTimeout bounds each JetStream API request provisioning makes (a
// stream, consumer or bucket looked up or created), whatever the deadline
// of the context passed in. A server that never answers one (a cluster
// still forming, say) fails that request after RequestTimeout instead of
// holding the caller until its own deadline; the caller retries (bus.Start
// retries the whole [Ensure] until its startup timeout).
const RequestTimeout = 5 * time.Second

// Sentinel errors of [Ensure].
var (
	// ErrInvalidConfig means a Config field has a value outside its range.
	ErrInvalidConfig = errors.New("provision: invalid config")
	// ErrConfigConflict means a stream, consumer or bucket already exists
	// with a configuration that contradicts what lionbus needs. Ensure
	// never changes an existing resource; the operator must fix or remove
	// it. The error is a *ConflictError (several joined when several fields
	// differ).
	ErrConfigConflict = errors.New("provision: existing resource has a conflicting configuration")
)

// ConflictError describes one field of an existing resource that conflicts
// with the wanted configuration. It matches ErrConfigConflict with errors.Is.
type ConflictError struct {
	// Resource names the resource, e.g. "stream LION_OPS".
	Resource string
	// Field is the configuration field, e.g. "retention".
	Field string
	// Existing and Wanted are the field's value on the server and the value
	// lionbus needs.
	Existing, Wanted string
}

// Error says which resource and field differ, and how.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("provision: %s already exists with %s %s, want %s (left unchanged)",
		e.Resource, e.Field, e.Existing, e.Wanted)
}

// Unwrap returns ErrConfigConflict.
func (e *ConflictError) Unwrap() error { return ErrConfigConflict }

// Config configures the streams, consumer and buckets created by
// [Ensure], and the limits the codec enforces. The zero value of every
// field means its default.
type Config struct {
	// AckWait is how long the server waits for a worker to acknowledge a
	// request (or signal progress) before redelivering it: how soon the
	// requests of a worker that died run again elsewhere. A live worker
	// reports progress every half of it, so a slow request is never
	// redelivered. Default 5s.
	AckWait time.Duration

	// DeadMaxAge is how long the dead-letter stream keeps a request that
	// failed on every delivery or could not be answered. Default 7 days.
	DeadMaxAge time.Duration

	// DeadMaxMsgs bounds the dead-letter stream; past it the oldest entry
	// is dropped. Default 10000; -1 means unlimited.
	DeadMaxMsgs int64
	// ChunksMaxAge is how long the chunks of runs (and of streamed calls)
	// are kept in the chunk stream, for clients that subscribe late or
	// reconnect. Default 1h.
	ChunksMaxAge time.Duration

	// DuplicateWindow is how long the ops and history streams remember a
	// message id (the CloudEvent id) to drop duplicate publishes.
	// Default 2m.
	DuplicateWindow time.Duration

	// EventsMaxAge is how long lifecycle, message-added and hook events are
	// kept. Default 24h.
	EventsMaxAge time.Duration

	// LeaseTTL is how long a branch stays pinned to a worker that stopped
	// renewing its lease (one that died): the age limit of the leases
	// stream. Workers renew every fifth of it, and a worker that could
	// not renew a lease for three fifths of it lets it go, stopping the
	// request it runs under it. Default 5s, as AckWait: a dead worker's
	// requests are delivered again when its leases are gone.
	LeaseTTL time.Duration

	// LeaseStorage is the storage of the leases stream when Ensure
	// creates it: LeasesOnFile (the default, "file") or LeasesInMemory
	// ("memory"). Leases on file survive a restart of the servers, so the
	// workers holding them go on; leases in memory cost less to take and
	// let go but are lost with a restart, and the stream created again
	// hands out no new lease for its grace (see [LeaseGraceEnd]). An
	// existing stream keeps its storage (a difference is drift).
	LeaseStorage string

	// HistoryMaxBytes bounds the history stream (the event log) in bytes.
	// Default -1: unlimited; history has no age limit because it is the
	// source of truth of every branch.
	HistoryMaxBytes int64

	// MaxAckPending bounds the requests delivered to all workers together
	// and not yet acknowledged. Default DefaultMaxAckPending (10,000).
	MaxAckPending int

	// MaxDeliver is how many times a request is delivered before the server
	// gives up on it. Default 10.
	MaxDeliver int

	// MaxPayload is the largest request the codec accepts, in bytes, the
	// whole message (headers and body) counted. Larger requests are
	// answered with a payload_too_large error. Default 1 MiB. The ops
	// stream itself only enforces the server's max_payload, so that an
	// oversize request reaches a worker and gets an error reply.
	MaxPayload int

	// OpsMaxMsgs bounds the backlog of requests waiting in the ops stream;
	// when it is full, new publishes fail. Default 100000; -1 means
	// unlimited.
	OpsMaxMsgs int64

	// Prefix is the subject prefix. Default protocol.DefaultPrefix ("lion").
	Prefix string

	// Replicas is the number of replicas of every stream and bucket (1 on a
	// single server, 3 in a typical cluster). Default 1.
	Replicas int

	// BatchMaxAge is how long a batch's record, input and item results
	// are kept after they were last written: a batch must end within it
	// (its deadline, if any, too). Default 7 days.
	BatchMaxAge time.Duration

	// JournalMaxAge is how long the journal of completed model calls
	// keeps each; default DefaultJournalMaxAge.
	JournalMaxAge time.Duration

	// RunLogMaxAge is how long the chunk logs and snapshots of runs with
	// stream_persist are kept (a finished run's log is removed at once;
	// an unfinished one's stays this long). Default 7 days.
	RunLogMaxAge time.Duration

	// ResultsMaxAge is how long results and errors are kept in the results
	// stream, so that a client that was away can still read them.
	// Default 24h.
	ResultsMaxAge time.Duration
}

// WithDefaults returns c with every zero field replaced by its default. It
// returns ErrInvalidConfig (wrapped) when a field is out of range.
func (c Config) WithDefaults() (Config, error) {
	if c.Prefix == "" {
		c.Prefix = protocol.DefaultPrefix
	}
	switch c.LeaseStorage {
	case "":
		c.LeaseStorage = LeasesOnFile
	case LeasesOnFile, LeasesInMemory:
	default:
		return c, fmt.Errorf("%w: LeaseStorage %q: want %q or %q", ErrInvalidConfig, c.LeaseStorage, LeasesOnFile, LeasesInMemory)
	}
	if !protocol.ValidToken(c.Prefix) {
		return c, fmt.Errorf("%w: prefix %q is not a valid subject token", ErrInvalidConfig, c.Prefix)
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"AckWait", &c.AckWait, DefaultAckWait},
		{"DeadMaxAge", &c.DeadMaxAge, DefaultDeadMaxAge},
		{"DuplicateWindow", &c.DuplicateWindow, DefaultDuplicateWindow},
		{"EventsMaxAge", &c.EventsMaxAge, DefaultEventsMaxAge},
		{"LeaseTTL", &c.LeaseTTL, DefaultLeaseTTL},
		{"ResultsMaxAge", &c.ResultsMaxAge, DefaultResultsMaxAge},
		{"ChunksMaxAge", &c.ChunksMaxAge, DefaultChunksMaxAge},
		{"RunLogMaxAge", &c.RunLogMaxAge, DefaultRunLogMaxAge},
		{"JournalMaxAge", &c.JournalMaxAge, DefaultJournalMaxAge},
		{"BatchMaxAge", &c.BatchMaxAge, DefaultBatchMaxAge},
	}
	for _, d := range durations {
		switch {
		case *d.v == 0:
			*d.v = d.def
		case *d.v < 0:
			return c, fmt.Errorf("%w: %s must be positive, got %s", ErrInvalidConfig, d.name, *d.v)
		}
	}
	ints := []struct {
		name string
		v    *int
		def  int
	}{
		{"MaxAckPending", &c.MaxAckPending, DefaultMaxAckPending},
		{"MaxDeliver", &c.MaxDeliver, DefaultMaxDeliver},
		{"MaxPayload", &c.MaxPayload, DefaultMaxPayload},
		{"Replicas", &c.Replicas, DefaultReplicas},
	}
	for _, d := range ints {
		switch {
		case *d.v == 0:
			*d.v = d.def
		case *d.v < 0:
			return c, fmt.Errorf("%w: %s must be positive, got %d", ErrInvalidConfig, d.name, *d.v)
		}
	}
	if c.Replicas > 5 {
		return c, fmt.Errorf("%w: Replicas must be at most 5, got %d", ErrInvalidConfig, c.Replicas)
	}
	if c.HistoryMaxBytes == 0 {
		c.HistoryMaxBytes = -1
	} else if c.HistoryMaxBytes < -1 {
		return c, fmt.Errorf("%w: HistoryMaxBytes must be positive or -1, got %d", ErrInvalidConfig, c.HistoryMaxBytes)
	}
	if c.DeadMaxMsgs == 0 {
		c.DeadMaxMsgs = DefaultDeadMaxMsgs
	} else if c.DeadMaxMsgs < -1 {
		return c, fmt.Errorf("%w: DeadMaxMsgs must be positive or -1, got %d", ErrInvalidConfig, c.DeadMaxMsgs)
	}
	if c.OpsMaxMsgs == 0 {
		c.OpsMaxMsgs = DefaultOpsMaxMsgs
	} else if c.OpsMaxMsgs < -1 {
		return c, fmt.Errorf("%w: OpsMaxMsgs must be positive or -1, got %d", ErrInvalidConfig, c.OpsMaxMsgs)
	}
	return c, nil
}

// Resources are the handles of everything [Ensure] created or found.
type Resources struct {
	// Config is the configuration provisioned, defaults applied.
	Config Config
	// Subjects derives every subject and name from Config.Prefix.
	Subjects protocol.Subjects

	// Ops holds requests (work-queue retention).
	Ops jetstream.Stream
	// Results holds the last result or error per reply subject.
	Results jetstream.Stream
	// History is the event log of every branch.
	History jetstream.Stream
	// Events holds lifecycle, message-added and hook events.
	Events jetstream.Stream
	// Leases holds the lease of each branch that a worker is running
	// requests of (file storage unless Config.LeaseStorage says memory,
	// at most one message per subject, aged out after Config.LeaseTTL).
	Leases jetstream.Stream
	// Dead holds the dead letters: requests that failed on every delivery
	// or could not be answered, one per request, with the reason in
	// headers (see the worker package).
	Dead jetstream.Stream
	// Chunks holds the chunks of runs and streamed calls, by request.
	Chunks jetstream.Stream
	// RunLog holds the live chunk logs and snapshots of runs with
	// stream_persist.
	RunLog jetstream.Stream
	// Journal holds the completed model calls of requests not committed
	// yet, one per call, for their redeliveries.
	Journal jetstream.Stream
	// Workers is the shared durable pull consumer on Ops.
	Workers jetstream.Consumer
	// Branches is the bucket of branch snapshots.
	Branches jetstream.KeyValue
	// Tools is the tool registry bucket.
	Tools jetstream.KeyValue
	// ToolResults is the bucket where tool services remember results by
	// idempotency key.
	ToolResults jetstream.KeyValue
	// Budgets is the bucket of the fleet's model budgets.
	Budgets jetstream.KeyValue
	// BudgetMembers is the bucket of the workers splitting the budgets,
	// each entry living BudgetMemberTTL.
	BudgetMembers jetstream.KeyValue
	// BatchResults holds the result of every batch item, the last per
	// item, in completion order.
	BatchResults jetstream.Stream
	// Batches is the bucket of batch records.
	Batches jetstream.KeyValue
	// BatchInput is the object store of batch inputs.
	BatchInput jetstream.ObjectStore

	// Drift lists tunable settings (ages, limits, ack wait, ...) of
	// resources that already existed and differ from Config. They are left
	// as they are; callers may log them.
	Drift []string

	js jetstream.JetStream // what Ensure provisioned through
}

// Ensure creates, if they do not exist, the streams, the shared workers
// consumer and the buckets lionbus uses, and returns their handles. It is
// idempotent: running it again, or from several workers at once, changes
// nothing. An existing resource is never modified: when it differs in a way
// that matters (subjects, retention, storage, ack policy, ...), Ensure
// returns ErrConfigConflict (as one or more joined *ConflictError values);
// when it differs only in a tunable limit, the difference is listed in
// Resources.Drift. It returns ErrInvalidConfig for a bad Config.
//
// A leases stream Ensure has to create while the requests stream already
// holds requests is created with a grace (see [LeaseGraceEnd]): workers
// may still hold leases of the stream it replaces.
func Ensure(ctx context.Context, js jetstream.JetStream, cfg Config) (*Resources, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	subj, err := protocol.NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	r := &Resources{Config: cfg, Subjects: subj, js: js}
	var conflicts []error
	for _, s := range r.streamSpecs() {
		if s.cfg.Name == subj.LeasesStream() {
			// Requests were served before: leases may be held.
			since := time.Time{}
			if r.Ops != nil && r.Ops.CachedInfo().State.LastSeq > 0 {
				since = time.Now()
			}
			s.cfg.FirstSeq = r.leaseBase(since)
		}
		st, _, drift, err := ensureStream(ctx, js, s.cfg, s.storageTunable)
		r.Drift = append(r.Drift, drift...)
		if errors.Is(err, ErrConfigConflict) {
			conflicts = append(conflicts, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		*s.dst = st
	}
	if len(conflicts) > 0 {
		return nil, errors.Join(conflicts...)
	}

	cons, _, drift, err := r.ensureWorkers(ctx)
	r.Drift = append(r.Drift, drift...)
	if err != nil {
		return nil, err
	}
	r.Workers = cons

	for _, b := range r.bucketSpecs() {
		kv, _, drift, err := ensureBucket(ctx, js, b.cfg)
		r.Drift = append(r.Drift, drift...)
		if errors.Is(err, ErrConfigConflict) {
			conflicts = append(conflicts, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		*b.dst = kv
	}
	for _, o := range r.objectSpecs() {
		obs, _, drift, err := ensureObjectStore(ctx, js, o.cfg)
		r.Drift = append(r.Drift, drift...)
		if errors.Is(err, ErrConfigConflict) {
			conflicts = append(conflicts, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		*o.dst = obs
	}
	if len(conflicts) > 0 {
		return nil, errors.Join(conflicts...)
	}
	return r, nil
}

// WorkersConfig returns the configuration of the shared workers consumer
// that Ensure and EnsureWorkers create.
func (r *Resources) WorkersConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       r.Subjects.WorkersConsumer(),
		Description:   "lionbus workers, shared by every worker",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       r.Config.AckWait,
		MaxDeliver:    r.Config.MaxDeliver,
		MaxAckPending: r.Config.MaxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		FilterSubject: r.Subjects.OpsWildcard(),
		Replicas:      r.Config.Replicas,
	}
}

// EnsureWorkers returns the shared workers consumer on the ops stream,
// creating it with [Resources.WorkersConfig] when it does not exist, and
// reports whether it created it. It is the part of [Ensure] that provisions
// the consumer, for a worker whose consumer was deleted (or lost) after
// Ensure ran. An existing consumer whose configuration conflicts is
// reported as by Ensure (ErrConfigConflict); tunable differences are not
// reported. It leaves r unchanged (r.Workers included); r.Ops must be set.
// Each API request is bounded by RequestTimeout.
func (r *Resources) EnsureWorkers(ctx context.Context) (jetstream.Consumer, bool, error) {
	c, created, _, err := r.ensureWorkers(ctx)
	return c, created, err
}

func (r *Resources) ensureWorkers(ctx context.Context) (jetstream.Consumer, bool, []string, error) {
	if r.Ops == nil {
		return nil, false, nil, fmt.Errorf("%w: EnsureWorkers needs the ops stream", ErrInvalidConfig)
	}
	return ensureConsumer(ctx, r.Ops, r.WorkersConfig())
}

// CreationKey is the metadata key of every stream, consumer and bucket
// lionbus creates: a value unique to the creation, so that of several
// workers creating the same resource at once, only the one whose request
// made it is told it created it (a create with the same configuration
// would succeed for each).
const CreationKey = "lionbus_creation"

// creation returns md with a new CreationKey.
func creation(md map[string]string) map[string]string {
	out := maps.Clone(md)
	if out == nil {
		out = map[string]string{}
	}
	out[CreationKey] = nuid.Next()
	return out
}

// request runs one JetStream API request f with a context bounded by
// RequestTimeout.
func request[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	return f(ctx)
}

// ensureStream returns the stream named by want, creating it when
// missing, and whether it created it. storageTunable reports a different
// storage as drift rather than a conflict.
func ensureStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig, storageTunable bool) (jetstream.Stream, bool, []string, error) {
	info := func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, want.Name) }
	st, err := request(ctx, info)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		want.Metadata = creation(want.Metadata)
		st, err = request(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.CreateStream(ctx, want) })
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Created concurrently with a different config: compare below.
			st, err = request(ctx, info)
		} else if err == nil {
			return st, true, nil, nil
		}
	}
	if err != nil {
		return nil, false, nil, fmt.Errorf("provision: stream %s: %w", want.Name, err)
	}
	drift, err := compareStream("stream "+want.Name, st.CachedInfo().Config, want, storageTunable)
	if err != nil {
		return nil, false, drift, err
	}
	return st, false, drift, nil
}

// compareStream reports fields of have that conflict with want as joined
// *ConflictError values, and tunable differences as drift.
func compareStream(res string, have, want jetstream.StreamConfig, storageTunable bool) ([]string, error) {
	var errs []error
	conflict := func(field string, h, w any) {
		errs = append(errs, &ConflictError{Resource: res, Field: field, Existing: fmt.Sprint(h), Wanted: fmt.Sprint(w)})
	}
	var drift []string
	tunable := func(field string, h, w any) {
		drift = append(drift, fmt.Sprintf("%s: %s is %v, configured %v (left unchanged)", res, field, h, w))
	}
	hs, ws := slices.Clone(have.Subjects), slices.Clone(want.Subjects)
	slices.Sort(hs)
	slices.Sort(ws)
	if !slices.Equal(hs, ws) {
		conflict("subjects", hs, ws)
	}
	if have.Retention != want.Retention {
		conflict("retention", have.Retention, want.Retention)
	}
	if have.Storage != want.Storage {
		if storageTunable {
			tunable("storage", have.Storage, want.Storage)
		} else {
			conflict("storage", have.Storage, want.Storage)
		}
	}
	if want.MaxMsgsPerSubject > 0 && have.MaxMsgsPerSubject != want.MaxMsgsPerSubject {
		conflict("max messages per subject", have.MaxMsgsPerSubject, want.MaxMsgsPerSubject)
	}
	if want.Mirror == nil && have.Mirror != nil {
		conflict("mirror", have.Mirror.Name, "none")
	}
	if have.Discard != want.Discard {
		tunable("discard policy", have.Discard, want.Discard)
	}
	if have.MaxAge != want.MaxAge {
		tunable("max age", have.MaxAge, want.MaxAge)
	}
	if want.Duplicates != 0 && have.Duplicates != want.Duplicates {
		tunable("duplicate window", have.Duplicates, want.Duplicates)
	}
	if want.MaxBytes != 0 && have.MaxBytes != want.MaxBytes {
		tunable("max bytes", have.MaxBytes, want.MaxBytes)
	}
	if want.MaxMsgs != 0 && have.MaxMsgs != want.MaxMsgs {
		tunable("max messages", have.MaxMsgs, want.MaxMsgs)
	}
	if have.Replicas != want.Replicas {
		tunable("replicas", have.Replicas, want.Replicas)
	}
	if want.DenyPurge && !have.DenyPurge {
		tunable("deny purge", have.DenyPurge, want.DenyPurge)
	}
	if want.AllowDirect && !have.AllowDirect {
		// Only slower: reads go through the JetStream API instead.
		tunable("allow direct", have.AllowDirect, want.AllowDirect)
	}
	return drift, errors.Join(errs...)
}

// ensureConsumer returns the durable consumer of want on st, creating it
// when missing, and whether it created it.
func ensureConsumer(ctx context.Context, st jetstream.Stream, want jetstream.ConsumerConfig) (jetstream.Consumer, bool, []string, error) {
	res := fmt.Sprintf("consumer %s on stream %s", want.Durable, st.CachedInfo().Config.Name)
	info := func(ctx context.Context) (jetstream.Consumer, error) { return st.Consumer(ctx, want.Durable) }
	c, err := request(ctx, info)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		want.Metadata = creation(want.Metadata)
		c, err = request(ctx, func(ctx context.Context) (jetstream.Consumer, error) { return st.CreateConsumer(ctx, want) })
		if errors.Is(err, jetstream.ErrConsumerExists) {
			c, err = request(ctx, info)
		} else if err == nil {
			return c, true, nil, nil
		}
	}
	if err != nil {
		return nil, false, nil, fmt.Errorf("provision: %s: %w", res, err)
	}
	have := c.CachedInfo().Config
	var errs []error
	conflict := func(field string, h, w any) {
		errs = append(errs, &ConflictError{Resource: res, Field: field, Existing: fmt.Sprint(h), Wanted: fmt.Sprint(w)})
	}
	var drift []string
	tunable := func(field string, h, w any) {
		drift = append(drift, fmt.Sprintf("%s: %s is %v, configured %v (left unchanged)", res, field, h, w))
	}
	if have.AckPolicy != want.AckPolicy {
		conflict("ack policy", have.AckPolicy, want.AckPolicy)
	}
	if have.DeliverSubject != "" {
		conflict("deliver subject", have.DeliverSubject, "none (pull consumer)")
	}
	filters := have.FilterSubjects
	if have.FilterSubject != "" {
		filters = append(filters, have.FilterSubject)
	}
	if len(filters) != 0 && !slices.Equal(filters, []string{want.FilterSubject}) {
		conflict("filter subjects", filters, []string{want.FilterSubject})
	}
	if have.DeliverPolicy != want.DeliverPolicy {
		conflict("deliver policy", have.DeliverPolicy, want.DeliverPolicy)
	}
	if have.AckWait != want.AckWait {
		tunable("ack wait", have.AckWait, want.AckWait)
	}
	if have.MaxDeliver != want.MaxDeliver {
		tunable("max deliver", have.MaxDeliver, want.MaxDeliver)
	}
	if have.MaxAckPending != want.MaxAckPending {
		tunable("max ack pending", have.MaxAckPending, want.MaxAckPending)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, false, drift, err
	}
	return c, false, drift, nil
}

// ensureBucket returns the KV bucket of want, creating it when missing,
// and whether it created it.
func ensureBucket(ctx context.Context, js jetstream.JetStream, want jetstream.KeyValueConfig) (jetstream.KeyValue, bool, []string, error) {
	return ensureStore(ctx, js, storeSpec[jetstream.KeyValue]{
		res: "bucket " + want.Bucket, stream: "KV_" + want.Bucket,
		lookup: func(ctx context.Context) (jetstream.KeyValue, error) { return js.KeyValue(ctx, want.Bucket) },
		create: func(ctx context.Context) (jetstream.KeyValue, error) {
			want.Metadata = creation(want.Metadata)
			return js.CreateKeyValue(ctx, want)
		},
		storage: want.Storage, ttl: want.TTL, replicas: want.Replicas, history: int64(want.History),
	})
}

// ensureObjectStore returns the object store of want, creating it when
// missing, and whether it created it.
func ensureObjectStore(ctx context.Context, js jetstream.JetStream, want jetstream.ObjectStoreConfig) (jetstream.ObjectStore, bool, []string, error) {
	return ensureStore(ctx, js, storeSpec[jetstream.ObjectStore]{
		res: "object store " + want.Bucket, stream: "OBJ_" + want.Bucket,
		lookup: func(ctx context.Context) (jetstream.ObjectStore, error) { return js.ObjectStore(ctx, want.Bucket) },
		create: func(ctx context.Context) (jetstream.ObjectStore, error) {
			want.Metadata = creation(want.Metadata)
			return js.CreateObjectStore(ctx, want)
		},
		storage: want.Storage, ttl: want.TTL, replicas: want.Replicas, history: -1,
	})
}

// storeSpec is what ensureStore needs of a KV bucket or an object store:
// how to look it up and create it, the stream beneath it and the settings
// to compare with that stream's.
type storeSpec[T any] struct {
	res, stream    string
	lookup, create func(context.Context) (T, error)
	storage        jetstream.StorageType
	ttl            time.Duration
	replicas       int
	history        int64 // the KV history; -1 for an object store
}

// ensureStore returns the store of s, creating it when missing, and
// whether it created it. An existing store of another storage is a
// ConflictError; other differences are drift, left unchanged.
func ensureStore[T any](ctx context.Context, js jetstream.JetStream, s storeSpec[T]) (T, bool, []string, error) {
	var zero T
	store, err := request(ctx, s.lookup)
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		store, err = request(ctx, s.create)
		if errors.Is(err, jetstream.ErrBucketExists) {
			store, err = request(ctx, s.lookup)
		} else if err == nil {
			return store, true, nil, nil
		}
	}
	if err != nil {
		return zero, false, nil, fmt.Errorf("provision: %s: %w", s.res, err)
	}
	st, err := request(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, s.stream) })
	if err != nil {
		return zero, false, nil, fmt.Errorf("provision: %s: %w", s.res, err)
	}
	have := st.CachedInfo().Config
	if have.Storage != s.storage {
		return zero, false, nil, &ConflictError{Resource: s.res, Field: "storage", Existing: have.Storage.String(), Wanted: s.storage.String()}
	}
	var drift []string
	if s.history >= 0 && have.MaxMsgsPerSubject != s.history {
		drift = append(drift, fmt.Sprintf("%s: history is %d, configured %d (left unchanged)", s.res, have.MaxMsgsPerSubject, s.history))
	}
	if have.MaxAge != s.ttl {
		drift = append(drift, fmt.Sprintf("%s: max age is %v, configured %v (left unchanged)", s.res, have.MaxAge, s.ttl))
	}
	if s.replicas > 0 && have.Replicas != s.replicas {
		drift = append(drift, fmt.Sprintf("%s: replicas are %d, configured %d (left unchanged)", s.res, have.Replicas, s.replicas))
	}
	return store, false, drift, nil
}
