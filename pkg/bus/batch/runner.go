package batch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/wire"
)

// errLost means another driver owns the batch now.
var errLost = errors.New("batch: ownership lost")

// itemState is what a runner knows of one item: its last status, the
// round it ran in, and its usage over every round.
type itemState struct {
	status string
	round  int
	used   wire.Usage
}

// runner drives one batch while its driver owns it.
type runner struct {
	d  *Driver
	kv jetstream.KeyValue
	id string

	wmu sync.Mutex // serializes writes of the record

	mu       sync.Mutex
	b        wire.Batch
	rev      uint64
	items    map[string]itemState // by item key: every item that has a result, and those queued again
	fin      map[string]int       // items by final status
	inflight map[string]string    // request id by item key
	cancels  bool                 // the items in flight were told to cancel
	requeued int                  // the round whose items were queued again
	usage    wire.Usage           // of every finished item, every round
	ceiling  bool                 // items were left unstarted by the cost ceiling
}

func newRunner(d *Driver, kv jetstream.KeyValue, b wire.Batch, rev uint64) *runner {
	return &runner{d: d, kv: kv, id: b.ID, b: b, rev: rev,
		items: map[string]itemState{}, fin: map[string]int{}, inflight: map[string]string{}}
}

// run drives the batch until it ends, the driver stops, or another driver
// takes it over.
func (r *runner) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := r.d.log.With().Str("batch", r.id).Logger()
	for ctx.Err() == nil {
		if err := r.rebuild(ctx); err == nil {
			break
		} else if ctx.Err() == nil {
			log.Warn().Err(err).Msg("batches: cannot read the batch's results; again in a moment")
			sleep(ctx, time.Second)
		}
	}
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		t := time.NewTicker(r.d.cfg.Tick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := r.write(ctx, nil); errors.Is(err, errLost) {
					log.Info().Msg("batches: another driver took the batch over")
					cancel()
					return
				}
				r.cancelInFlight(ctx)
			}
		}
	}()
	ended := false
	for ctx.Err() == nil && !ended {
		r.mu.Lock()
		round := r.b.Round
		r.mu.Unlock()
		r.requeue(round)
		err := r.pass(ctx, round)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			log.Warn().Err(err).Msg("batches: cannot read the batch's input; again in a moment")
			sleep(ctx, time.Second)
			continue
		}
		err = r.write(ctx, func(b *wire.Batch) bool {
			if b.Round != round {
				return false // a retry came: another pass
			}
			switch {
			case b.State == wire.BatchCanceling, r.ceiling || b.CostCeilingReached:
				b.State = wire.BatchCanceled
			case r.fin[wire.ItemExpired] > 0 && b.Deadline != nil && time.Now().After(*b.Deadline):
				b.State = wire.BatchExpired
			default:
				b.State = wire.BatchCompleted
			}
			now := time.Now().UTC()
			b.Ended, b.Owner, b.OwnerUntil = &now, "", time.Time{}
			return true
		})
		r.mu.Lock()
		ended = err == nil && wire.BatchFinal(r.b.State)
		r.mu.Unlock()
		if errors.Is(err, errLost) {
			break
		}
	}
	cancel()
	<-flushed
	if ended {
		log.Info().Msg("batches: batch ended")
		return
	}
	// Let the batch go at once, for another driver to take.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer rcancel()
	_ = r.write(rctx, func(b *wire.Batch) bool {
		b.Owner, b.OwnerUntil = "", time.Time{}
		return true
	})
}

// write stores the record with the current counts, renewing the
// ownership; mutate, when not nil, changes it first (under r.mu) and may
// refuse to by returning false, which writes nothing. A record changed
// meanwhile (a cancel, a retry) is read again and merged. errLost means
// another driver owns the batch.
func (r *runner) write(ctx context.Context, mutate func(*wire.Batch) bool) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	for tries := 0; ; tries++ {
		now := time.Now()
		r.mu.Lock()
		b := r.b
		b.Counts, b.Usage = r.countsLocked(), r.usage
		b.CostCeilingReached = b.CostCeilingReached || r.ceiling
		b.Owner, b.OwnerUntil, b.Updated = r.d.me, now.Add(r.d.cfg.OwnerTTL).UTC(), now.UTC()
		if mutate != nil && !mutate(&b) {
			r.mu.Unlock()
			return nil
		}
		rev := r.rev
		r.mu.Unlock()
		raw, err := json.Marshal(b)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		newRev, err := r.kv.Update(wctx, r.id, raw, rev)
		cancel()
		if err == nil {
			r.mu.Lock()
			r.b, r.rev = b, newRev
			r.mu.Unlock()
			_ = r.d.nc.Publish(r.d.res.Subjects.BatchProgress(r.id), raw)
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) || tries > 10 {
			return err
		}
		e, err := r.kv.Get(ctx, r.id)
		if err != nil {
			return err
		}
		var fresh wire.Batch
		if err := json.Unmarshal(e.Value(), &fresh); err != nil {
			return err
		}
		if fresh.Owner != r.d.me {
			return errLost
		}
		r.mu.Lock()
		r.rev = e.Revision()
		if fresh.State == wire.BatchCanceling && !wire.BatchFinal(r.b.State) {
			r.b.State = wire.BatchCanceling
		}
		r.b.MaxCostUSD = fresh.MaxCostUSD
		if fresh.Round > r.b.Round {
			r.b.Round, r.b.RetryStatuses, r.b.State, r.b.Deadline, r.b.Ended = fresh.Round, fresh.RetryStatuses, fresh.State, fresh.Deadline, nil
			r.b.CostCeilingReached = fresh.CostCeilingReached
		}
		r.mu.Unlock()
	}
}

// countsLocked returns the counts; r.mu is held.
func (r *runner) countsLocked() wire.BatchCounts {
	c := wire.BatchCounts{
		Total: r.b.Total, Running: len(r.inflight),
		Succeeded: r.fin[wire.ItemSucceeded], Failed: r.fin[wire.ItemFailed],
		Canceled: r.fin[wire.ItemCanceled], Expired: r.fin[wire.ItemExpired],
	}
	c.Queued = c.Total - c.Finished() - c.Running
	if c.Queued < 0 { // cannot happen with a sound record; keep the sum right
		c.Running += c.Queued
		c.Queued = 0
	}
	return c
}

// rebuild reads the batch's stored results: what its earlier owners did.
func (r *runner) rebuild(ctx context.Context) error {
	st, err := r.d.js.Stream(ctx, r.d.res.Subjects.BatchResultsStream())
	if err != nil {
		return err
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{r.d.res.Subjects.BatchResults(r.id)}})
	if err != nil {
		return err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return err
	}
	items, fin := map[string]itemState{}, map[string]int{}
	if info.NumPending == 0 {
		r.mu.Lock()
		r.items, r.fin, r.usage = items, fin, wire.Usage{}
		r.mu.Unlock()
		return nil
	}
	msgs, err := cons.Messages(jetstream.PullMaxMessages(512))
	if err != nil {
		return err
	}
	defer msgs.Stop()
	for pending := info.NumPending; pending > 0; {
		m, err := msgs.Next(jetstream.NextMaxWait(5 * time.Second))
		if err != nil {
			return err
		}
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		pending = md.NumPending
		var res wire.BatchResult
		if err := json.Unmarshal(m.Data(), &res); err != nil {
			continue
		}
		key := m.Subject()[strings.LastIndexByte(m.Subject(), '.')+1:]
		if old, ok := items[key]; ok {
			fin[old.status]--
		}
		used := res.TotalUsage
		if used == nil {
			used = res.Usage
		}
		st := itemState{status: res.Status, round: res.Round}
		if used != nil {
			st.used = *used
		}
		items[key] = st
		fin[res.Status]++
	}
	var usage wire.Usage
	for _, st := range items {
		usage = addUsage(usage, st.used)
	}
	r.mu.Lock()
	r.items, r.fin, r.usage = items, fin, usage
	r.mu.Unlock()
	return nil
}

// requeue queues again, once per round, the items a retry runs again: those
// of an earlier round whose status the retry names.
func (r *runner) requeue(round int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.requeued == round {
		return
	}
	r.requeued = round
	r.ceiling = false
	for key, st := range r.items {
		if st.status != wire.ItemQueued && st.round < round && slices.Contains(r.b.RetryStatuses, st.status) {
			r.fin[st.status]--
			r.items[key] = itemState{status: wire.ItemQueued, round: round, used: st.used}
		}
	}
}

// pass reads the batch's input and starts every item of the round that is
// not done, at most the batch's concurrency at once; it returns when they
// have all finished. Once the batch is canceling (or its deadline passed),
// the items not started are recorded canceled (or expired) instead.
func (r *runner) pass(ctx context.Context, round int) error {
	obs, err := r.d.js.ObjectStore(ctx, r.d.res.Subjects.BatchInputBucket())
	if err != nil {
		return err
	}
	r.mu.Lock()
	input, concurrency := r.b.Input, max(r.b.Concurrency, 1)
	r.mu.Unlock()
	obj, err := spool(ctx, obs, input)
	if err != nil {
		return err
	}
	defer obj.Close()
	slots := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	sc := bufio.NewScanner(obj)
	sc.Buffer(make([]byte, 0, 64<<10), wire.MaxBatchLineBytes+1)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		it, err := wire.ParseBatchLine(line)
		if err != nil {
			continue // checked when it was submitted
		}
		key := wire.BatchItemKey(it.CustomID)
		r.mu.Lock()
		st, seen := r.items[key]
		r.mu.Unlock()
		if seen && st.status != wire.ItemQueued {
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		r.mu.Lock()
		canceling := r.b.State == wire.BatchCanceling
		deadline := r.b.Deadline
		overCost := r.b.MaxCostUSD > 0 && reached(r.usage.CostUSD, r.b.MaxCostUSD)
		reqID := wire.BatchRequestID(r.id, key, round)
		if !canceling && !overCost && (deadline == nil || time.Now().Before(*deadline)) {
			r.inflight[key] = reqID
		}
		r.mu.Unlock()
		res := wire.BatchResult{CustomID: it.CustomID, Round: round, RequestID: reqID}
		switch {
		case overCost && !canceling:
			res.Status, res.Error = wire.ItemCanceled, &wire.BatchError{Code: wire.CodeCostCeiling, Message: "the batch's cost reached its ceiling (max_cost_usd) before the item started"}
			r.mu.Lock()
			r.ceiling = true
			r.mu.Unlock()
			r.finish(ctx, key, res)
			<-slots
			continue
		case canceling:
			res.Status, res.Error = wire.ItemCanceled, &wire.BatchError{Code: string(wire.CodeCanceled), Message: "the batch was canceled before the item started"}
			r.finish(ctx, key, res)
			<-slots
			continue
		case deadline != nil && !time.Now().Before(*deadline):
			res.Status, res.Error = wire.ItemExpired, &wire.BatchError{Code: "expired", Message: "the batch's deadline passed before the item started"}
			r.finish(ctx, key, res)
			<-slots
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			r.runItem(ctx, it, key, res, deadline)
		})
	}
	if err := sc.Err(); err != nil {
		return err
	}
	wg.Wait()
	return ctx.Err()
}

// maxInMemoryInput is the largest input a pass reads into memory; a
// larger one is copied into a temporary file. A variable for the tests.
var maxInMemoryInput uint64 = 64 << 20

// spool reads the object name of obs at once, into memory or (when larger
// than maxInMemoryInput) a temporary file removed on Close: a pass reads
// its lines as slots free, far slower than an object store read may wait.
func spool(ctx context.Context, obs jetstream.ObjectStore, name string) (io.ReadCloser, error) {
	obj, err := obs.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	info, err := obj.Info()
	if err != nil {
		return nil, err
	}
	if info.Size <= maxInMemoryInput {
		b, err := io.ReadAll(obj)
		if err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	f, err := os.CreateTemp("", "lionbus-batch-*")
	if err != nil {
		return nil, err
	}
	tmp := &tempFile{f}
	if _, err := io.Copy(f, obj); err != nil {
		tmp.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return nil, err
	}
	return tmp, nil
}

// tempFile is a temporary file removed when closed.
type tempFile struct{ *os.File }

func (t *tempFile) Close() error {
	err := t.File.Close()
	_ = os.Remove(t.Name())
	return err
}

// runItem runs one item: its branch (cloned from the template, or new),
// its request, its result stored, its branch deleted unless kept. A
// stateless item (a chat, without a template, its branch not kept) runs
// on no branch at all.
func (r *runner) runItem(ctx context.Context, it wire.BatchItem, key string, res wire.BatchResult, deadline *time.Time) {
	reqID := res.RequestID
	r.mu.Lock()
	template, keep := r.b.TemplateBranch, r.b.Branches == wire.BranchesKeep
	r.mu.Unlock()
	stateless := template == "" && !keep && it.Verb == wire.VerbChat
	if !stateless {
		res.BranchID = reqID
	}
	reply, err := r.d.cl.Result(ctx, reqID)
	if err != nil && stateless {
		reply, err = r.do(ctx, it.Verb, "", it.Data, reqID, deadline)
		if err != nil {
			r.abandon(key)
			return
		}
	} else if err != nil {
		// Not answered yet (or unknown): send it, once its branch exists.
		var created *client.Reply
		if template != "" {
			created, err = r.do(ctx, wire.VerbBranchClone, template, wire.BranchCloneRequest{BranchID: reqID}, reqID+"-c", nil)
		} else {
			created, err = r.do(ctx, wire.VerbBranchCreate, "", wire.BranchCreateRequest{BranchID: reqID}, reqID+"-c", nil)
		}
		if err != nil {
			r.abandon(key)
			return
		}
		r.mu.Lock()
		canceling := r.b.State == wire.BatchCanceling
		r.mu.Unlock()
		if cerr := created.Err(); cerr != nil && !errors.Is(cerr, wire.ErrBranchExists) {
			reply = created // the item fails as its branch did
		} else if canceling {
			res.Status, res.Error = wire.ItemCanceled, &wire.BatchError{Code: string(wire.CodeCanceled), Message: "the batch was canceled before the item's request was sent"}
			r.finish(ctx, key, res)
			return
		} else if reply, err = r.do(ctx, it.Verb, reqID, it.Data, reqID, deadline); err != nil {
			r.abandon(key)
			return
		}
	}
	out, err := reply.Result()
	var re *client.RemoteError
	switch {
	case err == nil:
		res.Status, res.Result, res.Usage = wire.ItemSucceeded, out, out.Usage
	case errors.As(err, &re):
		res.Status, res.Error = wire.ItemFailed, &wire.BatchError{Code: string(re.Code), Message: re.Message}
		r.mu.Lock()
		canceling := r.b.State == wire.BatchCanceling
		r.mu.Unlock()
		if re.Code == wire.CodeCanceled && canceling {
			res.Status = wire.ItemCanceled
		}
		if re.Code == wire.CodeTimeout && deadline != nil && !time.Now().Before(*deadline) {
			res.Status = wire.ItemExpired
		}
	default:
		res.Status, res.Error = wire.ItemFailed, &wire.BatchError{Code: string(wire.CodeInternal), Message: err.Error()}
	}
	if !r.finish(ctx, key, res) {
		return
	}
	if !keep && !stateless {
		if _, err := r.do(ctx, wire.VerbBranchDelete, reqID, wire.BranchDeleteRequest{Purge: true}, reqID+"-d", nil); err != nil && ctx.Err() == nil {
			r.d.log.Warn().Err(err).Str("batch", r.id).Str("branch", reqID).Msg("batches: cannot delete an item's branch")
		}
	}
}

// do sends a request and waits for its answer, again after a failure to
// send or to hear the answer, until ctx ends.
func (r *runner) do(ctx context.Context, verb, branch string, data any, id string, deadline *time.Time) (*client.Reply, error) {
	opts := []client.SubmitOption{client.WithID(id)}
	if deadline != nil {
		opts = append(opts, client.WithDeadline(*deadline))
	}
	delay := 100 * time.Millisecond
	for {
		reply, err := r.d.cl.Do(ctx, verb, branch, data, opts...)
		if err == nil || ctx.Err() != nil || errors.Is(err, client.ErrInvalidOption) {
			return reply, err
		}
		r.d.log.Debug().Err(err).Str("batch", r.id).Str("request", id).Msg("batches: request not answered; again")
		sleep(ctx, delay)
		delay = min(2*delay, 5*time.Second)
	}
}

// abandon forgets an item in flight without a result: the driver stops
// (the next owner runs it).
func (r *runner) abandon(key string) {
	r.mu.Lock()
	delete(r.inflight, key)
	r.mu.Unlock()
}

// finish stores an item's result and counts it; false when ctx ended
// first.
func (r *runner) finish(ctx context.Context, key string, res wire.BatchResult) bool {
	res.Finished = time.Now().UTC()
	r.mu.Lock()
	total := r.items[key].used // what its earlier rounds cost
	r.mu.Unlock()
	if res.Usage != nil {
		total = addUsage(total, *res.Usage)
	}
	if total != (wire.Usage{}) {
		res.TotalUsage = &total
	}
	raw, err := json.Marshal(res)
	if err != nil {
		r.abandon(key)
		return false
	}
	subject := r.d.res.Subjects.BatchResult(r.id, key)
	for {
		_, err = r.d.js.Publish(ctx, subject, raw)
		if err == nil {
			break
		}
		if errors.Is(err, nats.ErrMaxPayload) && res.Result != nil {
			res.Status, res.Result, res.Error = wire.ItemFailed, nil, &wire.BatchError{Code: "payload_too_large", Message: "the item's result is larger than the server's max payload"}
			raw, _ = json.Marshal(res)
			continue
		}
		if ctx.Err() != nil {
			r.abandon(key)
			return false
		}
		sleep(ctx, 200*time.Millisecond)
	}
	r.mu.Lock()
	delete(r.inflight, key)
	if old, ok := r.items[key]; ok && old.status != wire.ItemQueued {
		r.fin[old.status]--
	}
	r.items[key] = itemState{status: res.Status, round: res.Round, used: total}
	r.fin[res.Status]++
	if res.Usage != nil {
		r.usage = addUsage(r.usage, *res.Usage)
	}
	r.mu.Unlock()
	return true
}

// cancelInFlight tells the items in flight to cancel, once, when the
// batch is canceling.
func (r *runner) cancelInFlight(ctx context.Context) {
	r.mu.Lock()
	if r.b.State != wire.BatchCanceling || r.cancels {
		r.mu.Unlock()
		return
	}
	r.cancels = true
	ids := make([]string, 0, len(r.inflight))
	for _, id := range r.inflight {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	for _, id := range ids {
		if err := r.d.cl.Cancel(ctx, id); err != nil {
			r.d.log.Warn().Err(err).Str("batch", r.id).Str("request", id).Msg("batches: cannot cancel an item")
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// reached reports whether cost has reached ceiling, allowing for the
// rounding of a sum of many costs: fifty items of a cost c add up to a
// hair under 50*c.
func reached(cost, ceiling float64) bool { return cost >= ceiling*(1-1e-9) }

// addUsage returns the sum of two usages.
func addUsage(a, b wire.Usage) wire.Usage {
	return wire.Usage{
		InputTokens: a.InputTokens + b.InputTokens, OutputTokens: a.OutputTokens + b.OutputTokens,
		TotalTokens: a.TotalTokens + b.TotalTokens, CostUSD: a.CostUSD + b.CostUSD,
	}
}
