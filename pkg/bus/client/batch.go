package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Sentinel errors of the batch methods.
var (
	// ErrNoBatch means no batch has that id (never submitted, or older
	// than the batches bucket keeps).
	ErrNoBatch = errors.New("client: no such batch")
	// ErrBadBatchInput means a batch's input cannot be used: a bad line
	// (its number in a *BatchInputError), a custom_id given twice, no
	// item, too many. Nothing was submitted.
	ErrBadBatchInput = errors.New("client: bad batch input")
	// ErrBatchNotEnded means a retry of a batch that is still running.
	ErrBatchNotEnded = errors.New("client: batch has not ended")
)

// BatchInputError is a bad line of a batch's input. It matches
// ErrBadBatchInput and wire.ErrBadBatchLine.
type BatchInputError struct {
	// Line is the line's number, from 1.
	Line int
	Err  error
}

func (e *BatchInputError) Error() string {
	return fmt.Sprintf("client: batch input line %d: %v", e.Line, e.Err)
}

// Unwrap returns ErrBadBatchInput and the line's error.
func (e *BatchInputError) Unwrap() []error { return []error{ErrBadBatchInput, e.Err} }

// BatchSpec says how to run a batch ([Client.SubmitBatch]).
type BatchSpec struct {
	// ID is the batch id (see wire.ValidBatchID). Submitting the same id
	// again submits nothing: [BatchID] derives one from the input and the
	// spec, so that the same submission repeated gets the same id.
	ID string
	// TemplateBranch is the branch every item's branch is cloned from; ""
	// means each item starts on an empty branch.
	TemplateBranch string
	// Concurrency is the most items in flight over the fleet; 0 means
	// wire.DefaultBatchConcurrency.
	Concurrency int
	// Deadline, when not zero, expires the items not started by then.
	Deadline time.Time
	// KeepBranches keeps each item's branch; by default it is deleted
	// once the item's result is stored.
	KeepBranches bool
	// Metadata is kept with the batch as it is.
	Metadata map[string]string
	// MaxCostUSD, when above 0, is the batch's cost ceiling
	// (wire.Batch.MaxCostUSD): no item starts once the finished ones cost
	// that much by the workers' price table.
	MaxCostUSD float64 `json:",omitempty"`
}

// BatchID returns the id a submission of input with spec (its ID left
// out) gets: "b" and 24 hex digits of a SHA-256 over both. It reads input
// to its end.
func BatchID(input io.Reader, spec BatchSpec) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, input); err != nil {
		return "", fmt.Errorf("client: batch id: %w", err)
	}
	spec.ID = ""
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	h.Write(b)
	return "b" + hex.EncodeToString(h.Sum(nil)[:12]), nil
}

func (c *Client) batches(ctx context.Context) (jetstream.KeyValue, error) {
	kv, err := c.js.KeyValue(ctx, c.subj.BatchesBucket())
	if err != nil {
		return nil, fmt.Errorf("client: batches bucket %s: %w", c.subj.BatchesBucket(), err)
	}
	return kv, nil
}

// SubmitBatch submits the JSONL input (one wire.BatchItem per line, or a
// line in the OpenAI Batch input shape; empty lines are skipped) as the
// batch spec.ID. The input goes to the batch input object store in chunks,
// so its size is not bound by the server's max payload; each line is
// checked on the way (wire.ParseBatchLine, custom_ids unique), and a bad
// one stops the submission with a *BatchInputError before the batch
// exists. When the batch already exists, nothing is sent and its record
// is returned: a submitter that died half-way runs again safely. The
// batch runs when a worker takes it, within a second.
func (c *Client) SubmitBatch(ctx context.Context, spec BatchSpec, input io.Reader) (*wire.Batch, error) {
	if !wire.ValidBatchID(spec.ID) {
		return nil, fmt.Errorf("%w: batch id %q: want 1 to %d characters of [A-Za-z0-9_-]", ErrInvalidOption, spec.ID, wire.MaxBatchIDLength)
	}
	if spec.Concurrency < 0 || spec.Concurrency > wire.MaxBatchConcurrency {
		return nil, fmt.Errorf("%w: concurrency %d: want 1 to %d", ErrInvalidOption, spec.Concurrency, wire.MaxBatchConcurrency)
	}
	if spec.TemplateBranch != "" && !wire.ValidID(spec.TemplateBranch) {
		return nil, fmt.Errorf("%w: template branch %q: want %s", ErrInvalidOption, spec.TemplateBranch, wire.IDRule)
	}
	if err := checkMaxCost(spec.MaxCostUSD); err != nil {
		return nil, err
	}
	if spec.Concurrency == 0 {
		spec.Concurrency = wire.DefaultBatchConcurrency
	}
	kv, err := c.batches(ctx)
	if err != nil {
		return nil, err
	}
	if b, err := c.Batch(ctx, spec.ID); err == nil {
		return b, nil
	} else if !errors.Is(err, ErrNoBatch) {
		return nil, err
	}
	obs, err := c.js.ObjectStore(ctx, c.subj.BatchInputBucket())
	if err != nil {
		return nil, fmt.Errorf("client: batch input store %s: %w", c.subj.BatchInputBucket(), err)
	}
	v := &lineChecker{keys: map[string]bool{}}
	if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: spec.ID, Description: "lionbus batch input"}, io.TeeReader(input, v)); err != nil {
		if v.err != nil {
			return nil, v.err
		}
		return nil, fmt.Errorf("client: batch input: %w", err)
	}
	if err := v.end(); err != nil {
		_ = obs.Delete(ctx, spec.ID)
		return nil, err
	}
	now := time.Now().UTC()
	b := wire.Batch{
		ID: spec.ID, Input: spec.ID, Total: v.n, TemplateBranch: spec.TemplateBranch,
		Concurrency: spec.Concurrency, Branches: wire.BranchesDelete, Metadata: spec.Metadata, MaxCostUSD: spec.MaxCostUSD,
		Created: now, State: wire.BatchRunning, Round: 1, Updated: now,
		Counts: wire.BatchCounts{Total: v.n, Queued: v.n},
	}
	if spec.KeepBranches {
		b.Branches = wire.BranchesKeep
	}
	if !spec.Deadline.IsZero() {
		d := spec.Deadline.UTC()
		b.Deadline = &d
	}
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	if _, err := kv.Create(ctx, spec.ID, raw); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return c.Batch(ctx, spec.ID) // submitted at the same time
		}
		return nil, fmt.Errorf("client: batch %s: %w", spec.ID, err)
	}
	return &b, nil
}

// lineChecker checks the lines of a batch's input as they are written.
type lineChecker struct {
	buf  []byte
	line int
	n    int
	keys map[string]bool
	err  error
}

func (v *lineChecker) Write(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	v.buf = append(v.buf, p...)
	for {
		i := bytes.IndexByte(v.buf, '\n')
		if i < 0 {
			break
		}
		v.check(v.buf[:i])
		v.buf = v.buf[i+1:]
		if v.err != nil {
			return 0, v.err
		}
	}
	if len(v.buf) > wire.MaxBatchLineBytes {
		v.line++
		v.err = &BatchInputError{Line: v.line, Err: fmt.Errorf("%w: longer than %d bytes", wire.ErrBadBatchLine, wire.MaxBatchLineBytes)}
		return 0, v.err
	}
	v.buf = slices.Clip(v.buf)
	return len(p), nil
}

func (v *lineChecker) check(line []byte) {
	v.line++
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	if len(line) > wire.MaxBatchLineBytes {
		v.err = &BatchInputError{Line: v.line, Err: fmt.Errorf("%w: longer than %d bytes", wire.ErrBadBatchLine, wire.MaxBatchLineBytes)}
		return
	}
	it, err := wire.ParseBatchLine(line)
	if err != nil {
		v.err = &BatchInputError{Line: v.line, Err: err}
		return
	}
	if v.keys[it.CustomID] {
		v.err = &BatchInputError{Line: v.line, Err: fmt.Errorf("%w: custom_id %q is given twice", wire.ErrBadBatchLine, it.CustomID)}
		return
	}
	v.keys[it.CustomID] = true
	v.n++
	if v.n > wire.MaxBatchItems {
		v.err = &BatchInputError{Line: v.line, Err: fmt.Errorf("%w: more than %d items", wire.ErrBadBatchLine, wire.MaxBatchItems)}
	}
}

// end checks the last line and that there was an item.
func (v *lineChecker) end() error {
	if v.err == nil && len(bytes.TrimSpace(v.buf)) > 0 {
		v.check(v.buf)
	}
	if v.err != nil {
		return v.err
	}
	if v.n == 0 {
		return fmt.Errorf("%w: no item", ErrBadBatchInput)
	}
	return nil
}

// Batch returns the record of batch id: its state and counts, at most
// about a second old while it runs. A missing batch is ErrNoBatch.
func (c *Client) Batch(ctx context.Context, id string) (*wire.Batch, error) {
	b, _, err := c.batch(ctx, id)
	return b, err
}

func (c *Client) batch(ctx context.Context, id string) (*wire.Batch, uint64, error) {
	if !wire.ValidBatchID(id) {
		return nil, 0, fmt.Errorf("%w: batch id %q", ErrInvalidOption, id)
	}
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	kv, err := c.batches(ctx)
	if err != nil {
		return nil, 0, err
	}
	e, err := kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, fmt.Errorf("%w: %s", ErrNoBatch, id)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("client: batch %s: %w", id, err)
	}
	var b wire.Batch
	if err := json.Unmarshal(e.Value(), &b); err != nil {
		return nil, 0, fmt.Errorf("client: batch %s: %w", id, err)
	}
	return &b, e.Revision(), nil
}

// Batches returns the record of every batch the bucket holds, oldest
// first.
func (c *Client) Batches(ctx context.Context) ([]wire.Batch, error) {
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	kv, err := c.batches(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("client: batches: %w", err)
	}
	var out []wire.Batch
	for k := range keys.Keys() {
		b, err := c.Batch(ctx, k)
		if errors.Is(err, ErrNoBatch) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *b)
	}
	slices.SortFunc(out, func(a, b wire.Batch) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// updateBatch changes batch id's record with f, again on a concurrent write,
// and returns the record written. f returning false leaves it as it is.
func (c *Client) updateBatch(ctx context.Context, id string, f func(*wire.Batch) (bool, error)) (*wire.Batch, error) {
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	kv, err := c.batches(ctx)
	if err != nil {
		return nil, err
	}
	for {
		b, rev, err := c.batch(ctx, id)
		if err != nil {
			return nil, err
		}
		change, err := f(b)
		if err != nil || !change {
			return b, err
		}
		b.Updated = time.Now().UTC()
		raw, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		_, err = kv.Update(ctx, id, raw, rev)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return nil, fmt.Errorf("client: batch %s: %w", id, err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// CancelBatch cancels batch id: the worker driving it starts no new item
// (within a second) and cancels the items in flight; the items not
// finished end canceled. A batch that has ended is left as it is.
func (c *Client) CancelBatch(ctx context.Context, id string) (*wire.Batch, error) {
	return c.updateBatch(ctx, id, func(b *wire.Batch) (bool, error) {
		if wire.BatchFinal(b.State) || b.State == wire.BatchCanceling {
			return false, nil
		}
		b.State = wire.BatchCanceling
		return true, nil
	})
}

// RetryBatch runs again the items of the ended batch id whose status is
// one of statuses (default failed and expired; canceled may be named too,
// succeeded never), as a new round with new request ids. Their earlier
// results are replaced as they finish. A deadline that has passed is
// dropped, else kept. A batch still running is ErrBatchNotEnded.
func (c *Client) RetryBatch(ctx context.Context, id string, statuses ...string) (*wire.Batch, error) {
	if len(statuses) == 0 {
		statuses = []string{wire.ItemFailed, wire.ItemExpired}
	}
	for _, s := range statuses {
		if s != wire.ItemFailed && s != wire.ItemExpired && s != wire.ItemCanceled {
			return nil, fmt.Errorf("%w: retry status %q: want failed, expired or canceled", ErrInvalidOption, s)
		}
	}
	return c.updateBatch(ctx, id, func(b *wire.Batch) (bool, error) {
		if !wire.BatchFinal(b.State) {
			return false, fmt.Errorf("%w: batch %s is %s", ErrBatchNotEnded, id, b.State)
		}
		n := 0
		for _, s := range statuses {
			switch s {
			case wire.ItemFailed:
				n += b.Counts.Failed
			case wire.ItemExpired:
				n += b.Counts.Expired
			case wire.ItemCanceled:
				n += b.Counts.Canceled
			}
		}
		if n == 0 {
			return false, nil
		}
		b.Round++
		b.RetryStatuses = slices.Clone(statuses)
		b.CostCeilingReached = false
		b.State = wire.BatchRunning
		b.Ended = nil
		if b.Deadline != nil && time.Now().After(*b.Deadline) {
			b.Deadline = nil
		}
		return true, nil
	})
}

// SetBatchMaxCost sets the cost ceiling of batch id (wire.Batch.MaxCostUSD;
// 0 removes it), running or ended: the worker driving it follows the new
// ceiling within a second. To run the items a ceiling left unstarted,
// raise it and retry the canceled items ([Client.RetryBatch] with
// wire.ItemCanceled).
func (c *Client) SetBatchMaxCost(ctx context.Context, id string, usd float64) (*wire.Batch, error) {
	if err := checkMaxCost(usd); err != nil {
		return nil, err
	}
	return c.updateBatch(ctx, id, func(b *wire.Batch) (bool, error) {
		if b.MaxCostUSD == usd {
			return false, nil
		}
		b.MaxCostUSD = usd
		return true, nil
	})
}

// checkMaxCost checks a cost ceiling: a finite number, 0 or more.
func checkMaxCost(usd float64) error {
	if usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0) {
		return fmt.Errorf("%w: max cost %v: want 0 (no ceiling) or a positive number of US dollars", ErrInvalidOption, usd)
	}
	return nil
}

// WatchBatch calls f with batch id's record now and whenever it changes,
// until the batch has ended (after f saw the final record), f returns an
// error (returned) or ctx ends (its error).
func (c *Client) WatchBatch(ctx context.Context, id string, f func(*wire.Batch) error) error {
	if !wire.ValidBatchID(id) {
		return fmt.Errorf("%w: batch id %q", ErrInvalidOption, id)
	}
	kv, err := c.batches(ctx)
	if err != nil {
		return err
	}
	w, err := kv.Watch(ctx, id)
	if err != nil {
		return fmt.Errorf("client: watch batch %s: %w", id, err)
	}
	defer w.Stop()
	seen := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("client: watch batch %s: watcher stopped", id)
			}
			if e == nil {
				if !seen {
					return fmt.Errorf("%w: %s", ErrNoBatch, id)
				}
				continue
			}
			if e.Operation() != jetstream.KeyValuePut {
				return fmt.Errorf("%w: %s (removed)", ErrNoBatch, id)
			}
			seen = true
			var b wire.Batch
			if err := json.Unmarshal(e.Value(), &b); err != nil {
				return fmt.Errorf("client: batch %s: %w", id, err)
			}
			if err := f(&b); err != nil {
				return err
			}
			if wire.BatchFinal(b.State) {
				return nil
			}
		}
	}
}

// BatchResults calls f with the results of batch id in completion order,
// from the one after stream sequence after (0: from the first; each
// result's Seq is its own). With follow it goes on as items finish until
// the batch has ended and every result was read; else it returns once it
// read what is stored. f returning an error stops it with that error.
// An item run again (a retry) is read where its new result is.
func (c *Client) BatchResults(ctx context.Context, id string, after uint64, follow bool, f func(wire.BatchResult) error) error {
	if !wire.ValidBatchID(id) {
		return fmt.Errorf("%w: batch id %q", ErrInvalidOption, id)
	}
	st, err := c.stream(ctx, c.subj.BatchResultsStream(), "batch results")
	if err != nil {
		return err
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{c.subj.BatchResults(id)}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if after > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = after + 1
	}
	cons, err := st.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("client: batch results %s: %w", id, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("client: batch results %s: %w", id, err)
	}
	pending := info.NumPending
	msgs, err := cons.Messages(jetstream.PullMaxMessages(512))
	if err != nil {
		return fmt.Errorf("client: batch results %s: %w", id, err)
	}
	defer msgs.Stop()
	for {
		if pending == 0 {
			if !follow {
				return nil
			}
			b, err := c.Batch(ctx, id)
			if err != nil {
				return err
			}
			if wire.BatchFinal(b.State) {
				// Its last results were stored before the final record:
				// read what came since.
				info, err := cons.Info(ctx)
				if err != nil {
					return fmt.Errorf("client: batch results %s: %w", id, err)
				}
				if info.NumPending == 0 {
					return nil
				}
				follow = false
				pending = info.NumPending
			}
		}
		m, err := msgs.Next(jetstream.NextMaxWait(time.Second))
		if errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, nats.ErrTimeout) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			pending = 0
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("client: batch results %s: %w", id, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("client: batch results %s: %w", id, err)
		}
		pending = md.NumPending
		var r wire.BatchResult
		if err := json.Unmarshal(m.Data(), &r); err != nil {
			return fmt.Errorf("client: batch results %s: seq %d: %w", id, md.Sequence.Stream, err)
		}
		r.Seq = md.Sequence.Stream
		if err := f(r); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
