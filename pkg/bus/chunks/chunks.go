// Package chunks publishes the chunks of streamed requests on NATS: every
// chunk is a lionbus.run.chunk CloudEvent on <prefix>.chunk.<request id>,
// captured by the chunk stream (bounded age), so a client that subscribes
// late or reconnects replays from any seq and then follows live. It also
// keeps the run logs of stream_persist (see [RunLog]).
package chunks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// DefaultTimeout bounds each wait on the server: the confirmation of a
// request's chunks (a publisher's Close), reading a request's last chunk,
// storing a run snapshot, whatever the deadline of the context given (a
// request's own may be minutes away): an acknowledgement lost with a
// server that restarted fails the wait after it, and the request is
// retried, instead of holding it until its deadline.
const DefaultTimeout = 5 * time.Second

// ErrNotProvisioned is returned by the constructors without the chunk and
// run log streams.
var ErrNotProvisioned = errors.New("chunks: the chunk streams are not provisioned")

// Outlet is the [ops.ChunkOutlet] of a worker: each request's chunks are
// published asynchronously, in order, to the chunk stream; Close waits
// until the server stored every one of them, so they are all in the stream
// before the request's answer is sent.
type Outlet struct {
	js      jetstream.JetStream
	chunks  jetstream.Stream // the chunk stream, for the last chunk of a request
	subj    protocol.Subjects
	builder protocol.EventBuilder
}

var _ ops.ChunkOutlet = (*Outlet)(nil)

// NewOutlet returns the outlet publishing to res's chunk stream.
func NewOutlet(js jetstream.JetStream, res *provision.Resources, b protocol.EventBuilder) (*Outlet, error) {
	if js == nil || res == nil || res.Chunks == nil {
		return nil, ErrNotProvisioned
	}
	return &Outlet{js: js, chunks: res.Chunks, subj: res.Subjects, builder: b}, nil
}

// OpenChunks opens the chunk stream of req. On a redelivery (Attempt >
// 1) the seqs continue after the last chunk an earlier attempt stored, so
// a client following the request sees the new attempt's chunks after the
// old ones, none dropped as a duplicate and none numbered twice.
func (o *Outlet) OpenChunks(ctx context.Context, req ops.Request) (ops.ChunkStream, error) {
	p := o.open(ctx, req, o.subj.Chunk(req.ID), o.subj.ChunksStream())
	if req.Attempt > 1 {
		base, err := o.lastSeq(ctx, req.ID)
		if err != nil {
			return nil, err
		}
		p.base = base
	}
	return p, nil
}

// lastSeq returns the seq of the last chunk stored for request id, 0 for
// none.
func (o *Outlet) lastSeq(ctx context.Context, id string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	m, err := o.chunks.GetLastMsgForSubject(ctx, o.subj.Chunk(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("chunks: last chunk of %s: %w", id, err)
	}
	var c struct {
		Data ops.Chunk `json:"data"`
	}
	if err := json.Unmarshal(m.Data, &c); err != nil {
		return 0, fmt.Errorf("chunks: last chunk of %s: %w", id, err)
	}
	return c.Data.Seq, nil
}

var _ ops.ChunkHistory = (*Outlet)(nil)

// StoredChunks returns the chunks stored for req, in seq order: what its
// earlier attempts streamed, read back by a redelivered run to resume its
// CLI's session. More than max is an error wrapping ops.ErrTooManyChunks,
// and nothing is read. It waits DefaultTimeout at most.
func (o *Outlet) StoredChunks(ctx context.Context, req ops.Request, max int) ([]ops.Chunk, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	subject := o.subj.Chunk(req.ID)
	info, err := o.chunks.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return nil, fmt.Errorf("chunks: stored chunks of %s: %w", req.ID, err)
	}
	n := info.State.Subjects[subject]
	switch {
	case n == 0:
		return nil, nil
	case n > uint64(max):
		return nil, fmt.Errorf("chunks: %s stored %d chunks, over %d: %w", req.ID, n, max, ops.ErrTooManyChunks)
	}
	cons, err := o.js.OrderedConsumer(ctx, o.subj.ChunksStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("chunks: stored chunks of %s: %w", req.ID, err)
	}
	out := make([]ops.Chunk, 0, n)
	for uint64(len(out)) < n {
		batch, err := cons.Fetch(int(n)-len(out), jetstream.FetchContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("chunks: stored chunks of %s: %w", req.ID, err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			var c struct {
				Data ops.Chunk `json:"data"`
			}
			if err := json.Unmarshal(m.Data(), &c); err != nil {
				return nil, fmt.Errorf("chunks: stored chunk of %s: %w", req.ID, err)
			}
			out = append(out, c.Data)
		}
		if err := batch.Error(); err != nil {
			return nil, fmt.Errorf("chunks: stored chunks of %s: %w", req.ID, err)
		}
		if got == 0 {
			return nil, fmt.Errorf("chunks: stored chunks of %s: %d of %d read: %w", req.ID, len(out), n, ctx.Err())
		}
	}
	return out, nil
}

func (o *Outlet) open(ctx context.Context, req ops.Request, subject, stream string) *publisher {
	tp, _ := protocol.TraceParentFromContext(ctx)
	if tp == "" {
		tp = req.TraceParent
	}
	return &publisher{js: o.js, b: o.builder, subject: subject, stream: stream, req: req.ID, branch: req.BranchID, tp: tp}
}

// publisher publishes one request's chunks.
type publisher struct {
	js      jetstream.JetStream
	b       protocol.EventBuilder
	subject string
	stream  string
	req     string
	branch  string
	tp      string
	base    uint64 // added to every seq (a redelivered run's)

	mu   sync.Mutex
	futs []jetstream.PubAckFuture
}

// Emit publishes c without waiting for the server's acknowledgement.
func (p *publisher) Emit(_ context.Context, c ops.Chunk) error {
	c.Seq += p.base
	ev, err := p.b.Chunk(p.req, p.branch, p.tp, c)
	if err != nil {
		return err
	}
	msg, err := protocol.Encode(p.subject, ev, protocol.Structured)
	if err != nil {
		return err
	}
	f, err := p.js.PublishMsgAsync(msg, jetstream.WithExpectStream(p.stream))
	if err != nil {
		return fmt.Errorf("chunks: publish chunk %d of %s: %w", c.Seq, p.req, err)
	}
	p.mu.Lock()
	p.futs = append(p.futs, f)
	p.mu.Unlock()
	return nil
}

// Close waits until every chunk published is stored, or ctx ends, or
// DefaultTimeout passes.
func (p *publisher) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	p.mu.Lock()
	futs := p.futs
	p.futs = nil
	p.mu.Unlock()
	var errs []error
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			errs = append(errs, err)
		case <-ctx.Done():
			return fmt.Errorf("chunks: chunks of %s not confirmed: %w", p.req, ctx.Err())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("chunks: %d chunks of %s not stored: %w", len(errs), p.req, errors.Join(errs...))
	}
	return nil
}

// RunLog is the [ops.RunLog] of stream_persist: the live chunk log of a
// run on <prefix>.runlog.<dir>.<id>.chunks and its branch snapshots on
// <prefix>.runlog.<dir>.<id>.snapshot, in the run log stream, dir being
// the run's run log directory. Remove purges the live log;
// the snapshots stay until they age out.
type RunLog struct {
	o  *Outlet
	st jetstream.Stream
}

var _ ops.RunLog = (*RunLog)(nil)

// NewRunLog returns the run log of res.
func NewRunLog(js jetstream.JetStream, res *provision.Resources, b protocol.EventBuilder) (*RunLog, error) {
	if js == nil || res == nil || res.RunLog == nil {
		return nil, ErrNotProvisioned
	}
	return &RunLog{o: &Outlet{js: js, subj: res.Subjects, builder: b}, st: res.RunLog}, nil
}

// Snapshot is the data of a run snapshot message.
type Snapshot struct {
	// RequestID is the run's request id.
	RequestID string `json:"request_id"`
	// Dir is the run log directory the run persists in.
	Dir string `json:"dir"`
	// Final is false for the snapshot at the start, true at the end.
	Final bool `json:"final"`
	// Branch is the branch as it was.
	Branch *history.Branch `json:"branch"`
}

// ErrInvalidDir is returned for a run log directory that is not a valid
// one ([ops.ValidRunLogDir]); nothing is stored.
var ErrInvalidDir = fmt.Errorf("chunks: %w", ops.ErrInvalidRunLogDir)

func checkDir(dir string) error {
	if !ops.ValidRunLogDir(dir) {
		return fmt.Errorf("%w %q", ErrInvalidDir, ops.Truncate(dir, ops.MaxRunLogDirLength+8))
	}
	return nil
}

// Snapshot stores b as a snapshot of the run req in dir.
func (l *RunLog) Snapshot(ctx context.Context, dir string, req ops.Request, b *history.Branch, final bool) error {
	if err := checkDir(dir); err != nil {
		return err
	}
	data, err := json.Marshal(Snapshot{RequestID: req.ID, Dir: dir, Final: final, Branch: b})
	if err != nil {
		return fmt.Errorf("chunks: encode the snapshot of %s: %w", req.ID, err)
	}
	msg := nats.NewMsg(l.o.subj.RunSnapshot(dir, req.ID))
	msg.Data = data
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	if _, err := l.o.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(l.o.subj.RunLogStream())); err != nil {
		return fmt.Errorf("chunks: store the snapshot of %s: %w", req.ID, err)
	}
	return nil
}

// Open opens the live chunk log of req in dir.
func (l *RunLog) Open(ctx context.Context, dir string, req ops.Request) (ops.ChunkStream, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	return l.o.open(ctx, req, l.o.subj.RunLog(dir, req.ID), l.o.subj.RunLogStream()), nil
}

// Remove purges the live chunk log of req in dir.
func (l *RunLog) Remove(ctx context.Context, dir string, req ops.Request) error {
	if err := checkDir(dir); err != nil {
		return err
	}
	if err := l.st.Purge(ctx, jetstream.WithPurgeSubject(l.o.subj.RunLog(dir, req.ID))); err != nil {
		return fmt.Errorf("chunks: remove the run log of %s: %w", req.ID, err)
	}
	return nil
}

// Location names the subjects of the log and the snapshots of req in dir.
func (l *RunLog) Location(dir string, req ops.Request) ops.RunLogLocation {
	return ops.RunLogLocation{Dir: dir, Chunks: l.o.subj.RunLog(dir, req.ID), Snapshot: l.o.subj.RunSnapshot(dir, req.ID)}
}
