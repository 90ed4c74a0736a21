package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Defaults of [ApprovalsConfig].
const (
	// DefaultApprovalDeadline is how long a parked approval waits for an
	// answer before its deadline decides it.
	DefaultApprovalDeadline = 24 * time.Hour
	// DefaultApprovalSweep is how often a worker looks for approvals whose
	// deadline passed (and for decided ones not resumed yet).
	DefaultApprovalSweep = 5 * time.Second
	// DefaultApprovalsMaxBytes bounds the approvals bucket.
	DefaultApprovalsMaxBytes = 1 << 30
	// DefaultApprovalsRetain is how long a decided and resumed approval
	// stays readable (approvals show) before the sweep deletes it.
	DefaultApprovalsRetain = 24 * time.Hour
	// MaxApprovalAnswerBytes bounds an answer event: a bigger one is
	// refused by its stream.
	MaxApprovalAnswerBytes = 256 << 10
)

// OnDeadline values of [ApprovalsConfig].
const (
	DeadlineDeny    = "deny"
	DeadlineApprove = "approve"
)

// ErrParkedRequestTooLarge is what [Approvals.Keep] returns for a request
// too large to keep with its approval in the bucket.
var ErrParkedRequestTooLarge = errors.New("tools: parked request too large to keep")

// ApprovalsConfig configures [OpenApprovals].
type ApprovalsConfig struct {
	// Prefix is the subject prefix; "" means DefaultPrefix.
	Prefix string
	// Deadline is how long an approval waits; 0 means
	// DefaultApprovalDeadline.
	Deadline time.Duration
	// OnDeadline is what a passed deadline decides: DeadlineDeny ("" too)
	// or DeadlineApprove.
	OnDeadline string
	// Sweep is the period of the deadline sweep; 0 means
	// DefaultApprovalSweep.
	Sweep time.Duration
	// Retain is how long a decided, resumed approval is kept; 0 means
	// DefaultApprovalsRetain.
	Retain time.Duration
	// MaxBytes bounds the approvals bucket; 0 means
	// DefaultApprovalsMaxBytes.
	MaxBytes int64
	// MaxValueBytes bounds one approvalRecord (an approval with its parked
	// request); 0 means 1 MiB, the NATS server's default max_payload.
	MaxValueBytes int
	// Source is the CloudEvents source of the events the worker
	// publishes; "" means "/lionbus/worker".
	Source string
	// Denied are tools no branch may call (as Policy.Denied).
	Denied []string
	// Logger receives the log of answers and sweeps.
	Logger zerolog.Logger
	// Now returns the time; nil means time.Now.
	Now func() time.Time
}

// Approvals keeps parked approvals: the bucket that is their source of
// truth, the stream that keeps answers until a worker reads them, and the
// worker's part in both (see docs/approvals.md). It is an ops.Authorizer
// that parks every call it does not deny.
type Approvals struct {
	cfg  ApprovalsConfig
	nc   *nats.Conn
	js   jetstream.JetStream
	kv   jetstream.KeyValue
	st   jetstream.Stream
	subj protocol.Subjects
	log  zerolog.Logger

	// edited are the edited arguments of approvals Authorize found
	// approved with edits, until their call is invoked (Arguments); order
	// is their insertion order, to drop the oldest past maxEdited.
	mu     sync.Mutex
	edited map[string]map[string]any
	order  []string
}

// maxEdited bounds the edited arguments an Approvals keeps between a
// call's authorization and its invocation.
const maxEdited = 1024

// approvalRecord is what the bucket holds under an approval id: the approval, and
// the parked request once the worker kept it.
type approvalRecord struct {
	wire.Approval
	Request *parkedMsg `json:"request,omitempty"`
}

// parkedMsg is a parked request message.
type parkedMsg struct {
	Subject string              `json:"subject"`
	Header  map[string][]string `json:"header,omitempty"`
	Data    []byte              `json:"data"`
}

// OpenApprovals opens (creating when missing) the approvals bucket, the
// answers stream and its consumer on js.
func OpenApprovals(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, cfg ApprovalsConfig) (*Approvals, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = DefaultApprovalDeadline
	}
	if cfg.Sweep <= 0 {
		cfg.Sweep = DefaultApprovalSweep
	}
	if cfg.Retain <= 0 {
		cfg.Retain = DefaultApprovalsRetain
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultApprovalsMaxBytes
	}
	if cfg.MaxValueBytes <= 0 {
		cfg.MaxValueBytes = 1 << 20
	}
	if cfg.Source == "" {
		cfg.Source = "/lionbus/worker"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch cfg.OnDeadline {
	case "":
		cfg.OnDeadline = DeadlineDeny
	case DeadlineDeny, DeadlineApprove:
	default:
		return nil, fmt.Errorf("tools: approvals: OnDeadline %q: want %q or %q", cfg.OnDeadline, DeadlineDeny, DeadlineApprove)
	}
	subj := protocol.Subjects{Prefix: cfg.Prefix}
	kv, err := openBucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: subj.ApprovalsBucket(), Description: "lionbus parked approvals", History: 1,
		Storage: jetstream.FileStorage, MaxBytes: cfg.MaxBytes,
	}, "approvals")
	if err != nil {
		return nil, err
	}
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: subj.ApprovalsStream(), Description: "lionbus approval answers, until a worker reads them",
		Subjects: []string{subj.ApprovalAnswersWildcard()}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, MaxMsgSize: MaxApprovalAnswerBytes, Duplicates: 2 * time.Minute,
		MaxAge: cfg.Deadline + cfg.Retain,
	})
	if err != nil {
		return nil, fmt.Errorf("tools: approvals stream %s: %w", subj.ApprovalsStream(), err)
	}
	return &Approvals{cfg: cfg, nc: nc, js: js, kv: kv, st: st, subj: subj, log: cfg.Logger}, nil
}

// get reads the record of id and its revision; jetstream.ErrKeyNotFound
// when there is none.
func (a *Approvals) get(ctx context.Context, id string) (*approvalRecord, uint64, error) {
	e, err := a.kv.Get(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	var r approvalRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return nil, 0, fmt.Errorf("tools: approval %s: %w", id, err)
	}
	return &r, e.Revision(), nil
}

// update writes r over revision rev; jetstream.ErrKeyExists (wrapped)
// when another writer came first.
func (a *Approvals) update(ctx context.Context, r *approvalRecord, rev uint64) (uint64, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	if len(raw) > a.cfg.MaxValueBytes {
		return 0, fmt.Errorf("%w: %d bytes, at most %d", ErrParkedRequestTooLarge, len(raw), a.cfg.MaxValueBytes)
	}
	if rev == 0 {
		return a.kv.Create(ctx, r.ID, raw)
	}
	return a.kv.Update(ctx, r.ID, raw, rev)
}

// Get returns the approval id.
func (a *Approvals) Get(ctx context.Context, id string) (*wire.Approval, error) {
	r, _, err := a.get(ctx, id)
	if err != nil {
		return nil, err
	}
	return &r.Approval, nil
}

// Keep stores the parked request of approval id (the request message's
// subject, header and data), so that any worker can publish it again to
// resume it; when the approval was decided already, it resumes it at once.
// A pending approval's lionbus.approval.pending event is published then.
func (a *Approvals) Keep(ctx context.Context, id, requestID, subject string, header nats.Header, data []byte) error {
	for {
		r, rev, err := a.get(ctx, id)
		if err != nil {
			return fmt.Errorf("tools: keep the request parked for approval %s: %w", id, err)
		}
		r.Request = &parkedMsg{Subject: subject, Header: header, Data: data}
		r.RequestID, r.Parked = requestID, true
		rev, err = a.update(ctx, r, rev)
		if errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		if err != nil {
			return fmt.Errorf("tools: keep the request parked for approval %s: %w", id, err)
		}
		if r.State != wire.ApprovalPending {
			return a.resume(ctx, r, rev)
		}
		a.publishPending(ctx, r)
		return nil
	}
}

// resume publishes r's parked request again, with the resume header and a
// message id of its own (so that concurrent resumers publish it once), and
// marks r resumed. A approvalRecord without its request yet is resumed by Keep.
func (a *Approvals) resume(ctx context.Context, r *approvalRecord, rev uint64) error {
	if r.Request == nil || r.Resumed {
		return nil
	}
	msg := nats.NewMsg(r.Request.Subject)
	for k, v := range r.Request.Header {
		msg.Header[k] = v
	}
	msg.Header.Set(protocol.ResumeHeader, r.ID)
	msg.Header.Set(jetstream.MsgIDHeader, "resume."+r.ID)
	msg.Data = r.Request.Data
	if _, err := a.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("tools: resume request %s of approval %s: %w", r.RequestID, r.ID, err)
	}
	r.Resumed = true
	if _, err := a.update(ctx, r, rev); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		// Published: the sweep publishes it again (the same message id,
		// dropped as a duplicate) and marks it then.
		a.log.Debug().Err(err).Str("approval", r.ID).Msg("mark approval resumed")
	}
	a.log.Info().Str("approval", r.ID).Str("request", r.RequestID).Str("state", r.State).Msg("parked request resumed")
	return nil
}

// List returns the approvals in the bucket, pending ones only when
// pendingOnly; at most limit (0: all).
func (a *Approvals) List(ctx context.Context, pendingOnly bool, limit int) ([]wire.Approval, error) {
	return listApprovals(ctx, a.kv, pendingOnly, limit)
}

// listApprovals lists kv's approvals.
func listApprovals(ctx context.Context, kv jetstream.KeyValue, pendingOnly bool, limit int) ([]wire.Approval, error) {
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = lister.Stop() }()
	var out []wire.Approval
	for key := range lister.Keys() {
		e, err := kv.Get(ctx, key)
		if err != nil {
			continue // deleted meanwhile
		}
		var r approvalRecord
		if json.Unmarshal(e.Value(), &r) != nil || (pendingOnly && r.State != wire.ApprovalPending) {
			continue
		}
		out = append(out, r.Approval)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}
