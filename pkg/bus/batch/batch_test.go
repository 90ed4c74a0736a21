package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/batch"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
	"github.com/lionbus/lionbus/pkg/wire"
)

// countedModel answers like scripted:echo and counts its calls by
// instruction. An instruction starting with "fail" fails (a final
// provider error) on its first call only, so a retry succeeds; one
// starting with "block" waits until its call is cancelled.
type countedModel struct {
	mu    sync.Mutex
	calls map[string]int
}

func newCounted() *countedModel { return &countedModel{calls: map[string]int{}} }

func (m *countedModel) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	m.mu.Lock()
	m.calls[call.Instruction]++
	n := m.calls[call.Instruction]
	m.mu.Unlock()
	switch {
	case strings.HasPrefix(call.Instruction, "fail") && n == 1:
		return nil, &ops.ProviderError{Provider: "counted", Message: "scripted failure of " + call.Instruction}
	case strings.HasPrefix(call.Instruction, "block"):
		<-ctx.Done()
		return nil, ctx.Err()
	}
	call.Model = history.ModelRef{Provider: scripted.Name, Model: "echo"}
	return scripted.New().Complete(ctx, call)
}

func (m *countedModel) snapshot() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.calls))
	for k, v := range m.calls {
		out[k] = v
	}
	return out
}

// jsonl returns n lines: items named item-<i>, whose instruction is
// instr(i).
func jsonl(n int, instr func(i int) string) []byte {
	var b bytes.Buffer
	for i := range n {
		data, _ := json.Marshal(map[string]any{"instruction": instr(i), "chat_model": "counted:echo"})
		fmt.Fprintf(&b, `{"custom_id": "item-%d", "verb": "communicate", "data": %s}`+"\n", i, data)
	}
	return b.Bytes()
}

// sumChecker checks every progress record of a batch: counts that add up
// to the total.
func sumChecker(t *testing.T, nc *nats.Conn, subj string) func() int {
	t.Helper()
	var mu sync.Mutex
	seen := 0
	sub, err := nc.Subscribe(subj, func(m *nats.Msg) {
		var b wire.Batch
		if err := json.Unmarshal(m.Data, &b); err != nil {
			t.Errorf("progress: %v", err)
			return
		}
		if b.Counts.Sum() != b.Counts.Total || b.Counts.Total != b.Total {
			t.Errorf("progress counts %+v do not add up to the total %d", b.Counts, b.Total)
		}
		mu.Lock()
		seen++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return func() int { mu.Lock(); defer mu.Unlock(); return seen }
}

// waitEnded waits until batch id has ended and returns its record.
func waitEnded(t *testing.T, cl *client.Client, id string) *wire.Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var last *wire.Batch
	err := cl.WatchBatch(ctx, id, func(b *wire.Batch) error {
		if b.Counts.Sum() != b.Counts.Total {
			t.Errorf("watched counts %+v do not add up", b.Counts)
		}
		last = b
		return nil
	})
	if err != nil {
		t.Fatalf("watch %s: %v (last %+v)", id, err, last)
	}
	return last
}

// results reads every stored result of batch id, by custom_id, failing
// on a custom_id read twice.
func results(t *testing.T, cl *client.Client, id string) map[string]wire.BatchResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := map[string]wire.BatchResult{}
	var last uint64
	err := cl.BatchResults(ctx, id, 0, false, func(r wire.BatchResult) error {
		if _, dup := out[r.CustomID]; dup {
			t.Errorf("custom_id %s read twice", r.CustomID)
		}
		if r.Seq <= last {
			t.Errorf("results out of order: seq %d after %d", r.Seq, last)
		}
		last = r.Seq
		out[r.CustomID] = r
		return nil
	})
	if err != nil {
		t.Fatalf("results %s: %v", id, err)
	}
	return out
}

func startBus(t *testing.T, model *countedModel, workers int) *bustest.Bus {
	t.Helper()
	b := bustest.New(t, provision.Config{})
	for range workers {
		b.StartService(t, nil, nil, map[string]ops.Provider{"counted": model}, worker.Config{MaxInFlight: 64})
	}
	return b
}

func submit(t *testing.T, cl *client.Client, spec client.BatchSpec, input []byte) *wire.Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := cl.SubmitBatch(ctx, spec, bytes.NewReader(input))
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return b
}

// TestBatch_thousand_items_fifty_fail_then_retry: 950 succeed, 50 fail
// with their code, each custom_id once in the results; the retry runs
// the 50 failed and no other item (model calls counted), and they
// succeed.
func TestBatch_thousand_items_fifty_fail_then_retry(t *testing.T) {
	model := newCounted()
	b := startBus(t, model, 1)
	const n, fails = 1000, 50
	instr := func(i int) string {
		if i%(n/fails) == 7 {
			return fmt.Sprintf("fail %d", i)
		}
		return fmt.Sprintf("echo %d", i)
	}
	seen := sumChecker(t, b.NC, "lion.batch.progress.big")
	submit(t, b.Client, client.BatchSpec{ID: "big", Concurrency: 100}, jsonl(n, instr))
	end := waitEnded(t, b.Client, "big")
	want := wire.BatchCounts{Total: n, Succeeded: n - fails, Failed: fails}
	if end.State != wire.BatchCompleted || end.Counts != want {
		t.Fatalf("ended %s %+v, want completed %+v", end.State, end.Counts, want)
	}
	res := results(t, b.Client, "big")
	if len(res) != n {
		t.Fatalf("%d results, want %d", len(res), n)
	}
	for i := range n {
		r := res[fmt.Sprintf("item-%d", i)]
		if strings.HasPrefix(instr(i), "fail") {
			if r.Status != wire.ItemFailed || r.Error == nil || r.Error.Code != string(wire.CodeProvider) {
				t.Fatalf("item-%d: %+v, want failed with provider_error", i, r)
			}
			continue
		}
		var v string
		if r.Status != wire.ItemSucceeded || r.Result == nil || json.Unmarshal(r.Result.Value, &v) != nil || v != instr(i) {
			t.Fatalf("item-%d: %+v, want succeeded with %q", i, r, instr(i))
		}
	}
	calls := model.snapshot()
	for i := range n {
		if calls[instr(i)] != 1 {
			t.Fatalf("%q called %d times before the retry, want 1", instr(i), calls[instr(i)])
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := b.Client.RetryBatch(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	end = waitEnded(t, b.Client, "big")
	if want := (wire.BatchCounts{Total: n, Succeeded: n}); end.State != wire.BatchCompleted || end.Counts != want || end.Round != 2 {
		t.Fatalf("after retry %s round %d %+v, want completed round 2 %+v", end.State, end.Round, end.Counts, want)
	}
	calls = model.snapshot()
	for i := range n {
		want := 1
		if strings.HasPrefix(instr(i), "fail") {
			want = 2
		}
		if calls[instr(i)] != want {
			t.Fatalf("%q called %d times after the retry, want %d", instr(i), calls[instr(i)], want)
		}
	}
	res = results(t, b.Client, "big")
	for id, r := range res {
		if r.Status != wire.ItemSucceeded {
			t.Fatalf("%s after retry: %+v", id, r)
		}
	}
	if len(res) != n {
		t.Fatalf("%d results after retry, want %d", len(res), n)
	}
	if seen() == 0 {
		t.Fatal("no progress event")
	}
}

// waitCounts waits until batch id's record satisfies ok.
func waitCounts(t *testing.T, cl *client.Client, id string, what string, ok func(wire.BatchCounts) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errDone := fmt.Errorf("done")
	err := cl.WatchBatch(ctx, id, func(b *wire.Batch) error {
		if ok(b.Counts) {
			return errDone
		}
		return nil
	})
	if err != errDone {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// A cancel starts no new item and cancels those in flight: every item
// ends canceled, and only those that were in flight reached the model.
func TestBatch_cancel(t *testing.T) {
	model := newCounted()
	b := startBus(t, model, 1)
	const n, conc = 100, 10
	submit(t, b.Client, client.BatchSpec{ID: "cancel-me", Concurrency: conc}, jsonl(n, func(i int) string { return fmt.Sprintf("block %d", i) }))
	sumChecker(t, b.NC, "lion.batch.progress.cancel-me")
	waitCounts(t, b.Client, "cancel-me", "the items in flight", func(c wire.BatchCounts) bool { return c.Running == conc })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := b.Client.CancelBatch(ctx, "cancel-me"); err != nil {
		t.Fatal(err)
	}
	end := waitEnded(t, b.Client, "cancel-me")
	if want := (wire.BatchCounts{Total: n, Canceled: n}); end.State != wire.BatchCanceled || end.Counts != want {
		t.Fatalf("ended %s %+v, want canceled %+v", end.State, end.Counts, want)
	}
	res := results(t, b.Client, "cancel-me")
	if len(res) != n {
		t.Fatalf("%d results, want %d", len(res), n)
	}
	for id, r := range res {
		if r.Status != wire.ItemCanceled || r.Error == nil || r.Error.Code != string(wire.CodeCanceled) {
			t.Fatalf("%s: %+v, want canceled", id, r)
		}
	}
	calls := 0
	for _, c := range model.snapshot() {
		calls += c
	}
	if calls > conc {
		t.Fatalf("%d model calls, want at most the %d items in flight", calls, conc)
	}
	// Cancelling an ended batch changes nothing.
	again, err := b.Client.CancelBatch(ctx, "cancel-me")
	if err != nil || again.State != wire.BatchCanceled {
		t.Fatalf("cancel again: %+v, %v", again, err)
	}
}

// A deadline expires the items not started; those in flight carry it and
// time out, expired too.
func TestBatch_deadline(t *testing.T) {
	model := newCounted()
	b := startBus(t, model, 1)
	const n, conc = 40, 4
	// Two items answer, the rest block until the deadline.
	instr := func(i int) string {
		if i < 2 {
			return fmt.Sprintf("echo %d", i)
		}
		return fmt.Sprintf("block %d", i)
	}
	submit(t, b.Client, client.BatchSpec{ID: "late", Concurrency: conc, Deadline: time.Now().Add(3 * time.Second)}, jsonl(n, instr))
	end := waitEnded(t, b.Client, "late")
	if want := (wire.BatchCounts{Total: n, Succeeded: 2, Expired: n - 2}); end.State != wire.BatchExpired || end.Counts != want {
		t.Fatalf("ended %s %+v, want expired %+v", end.State, end.Counts, want)
	}
	res := results(t, b.Client, "late")
	for i := range n {
		r := res[fmt.Sprintf("item-%d", i)]
		want := wire.ItemExpired
		if i < 2 {
			want = wire.ItemSucceeded
		}
		if r.Status != want {
			t.Fatalf("item-%d: %+v, want %s", i, r, want)
		}
	}
	calls := 0
	for _, c := range model.snapshot() {
		calls += c
	}
	if calls > 2+conc {
		t.Fatalf("%d model calls, want at most %d (the items started before the deadline)", calls, 2+conc)
	}
}

// A submitter that stopped half-way through the input and ran again
// submits the batch once; submitting it yet again adds nothing; no item
// runs twice.
func TestBatch_resubmission(t *testing.T) {
	model := newCounted()
	b := startBus(t, model, 1)
	const n = 300
	input := jsonl(n, func(i int) string { return fmt.Sprintf("echo %d", i) })
	ctx, cancel := context.WithCancel(context.Background())
	half := &cutReader{data: input, cut: len(input) / 2, cancel: cancel}
	if _, err := b.Client.SubmitBatch(ctx, client.BatchSpec{ID: "again"}, half); err == nil {
		t.Fatal("a submission stopped half-way succeeded")
	}
	if _, err := b.Client.Batch(context.Background(), "again"); err == nil {
		t.Fatal("a batch exists after a submission stopped half-way")
	}
	first := submit(t, b.Client, client.BatchSpec{ID: "again"}, input)
	if first.Total != n {
		t.Fatalf("total %d, want %d", first.Total, n)
	}
	waitCounts(t, b.Client, "again", "some items done", func(c wire.BatchCounts) bool { return c.Succeeded > 0 })
	second := submit(t, b.Client, client.BatchSpec{ID: "again"}, input)
	if !second.Created.Equal(first.Created) {
		t.Fatalf("resubmitted batch created %s, first %s", second.Created, first.Created)
	}
	end := waitEnded(t, b.Client, "again")
	if want := (wire.BatchCounts{Total: n, Succeeded: n}); end.Counts != want {
		t.Fatalf("ended %+v, want %+v", end.Counts, want)
	}
	if len(results(t, b.Client, "again")) != n {
		t.Fatal("results missing")
	}
	calls := model.snapshot()
	if len(calls) != n {
		t.Fatalf("%d instructions reached the model, want %d", len(calls), n)
	}
	for instr, c := range calls {
		if c != 1 {
			t.Fatalf("%q called %d times", instr, c)
		}
	}
}

// cutReader returns data up to cut, then cancels the submission's context
// and fails, as a submitter dying half-way would stop.
type cutReader struct {
	data   []byte
	cut    int
	off    int
	cancel context.CancelFunc
}

func (r *cutReader) Read(p []byte) (int, error) {
	if r.off >= r.cut {
		r.cancel()
		return 0, context.Canceled
	}
	n := copy(p, r.data[r.off:r.cut])
	r.off += n
	return n, nil
}

// An interactive request is answered while a batch keeps its items in
// flight: the batch holds no more than its concurrency of the worker's
// slots, and puts no backlog in front of other requests.
func TestBatch_interactive_request_during_batch(t *testing.T) {
	model := newCounted()
	b := startBus(t, model, 1)
	const n, conc = 5000, 32
	submit(t, b.Client, client.BatchSpec{ID: "hog", Concurrency: conc}, jsonl(n, func(i int) string { return fmt.Sprintf("block %d", i) }))
	waitCounts(t, b.Client, "hog", "the items in flight", func(c wire.BatchCounts) bool { return c.Running == conc })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := b.Client.Do(ctx, wire.VerbBranchCreate, "", map[string]any{"branch_id": "chat"}); err != nil {
		t.Fatal(err)
	}
	reply, err := b.Client.Do(ctx, wire.VerbCommunicate, "chat", map[string]any{"instruction": "interactive", "chat_model": "counted:echo"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := reply.Result()
	if err != nil || string(res.Value) != `"interactive"` {
		t.Fatalf("interactive answer %v, %v", res, err)
	}
	during, err := b.Client.Batch(ctx, "hog")
	if err != nil {
		t.Fatal(err)
	}
	if during.State != wire.BatchRunning || during.Counts.Queued < n-2*conc {
		t.Fatalf("batch %s %+v when the interactive request was answered, want running with most items queued", during.State, during.Counts)
	}
	if _, err := b.Client.CancelBatch(ctx, "hog"); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, b.Client, "hog")
}

// Bad input is refused with the line's number, and nothing is
// submitted.
func TestBatch_bad_input(t *testing.T) {
	b := startBus(t, newCounted(), 0)
	for _, tc := range []struct {
		name, input string
		line        int
	}{
		{"not JSON", "{\"custom_id\": \"a\", \"verb\": \"chat\", \"data\": {}}\nnope\n", 2},
		{"no custom_id", `{"verb": "chat", "data": {}}`, 1},
		{"unknown verb", `{"custom_id": "a", "verb": "branch.delete", "data": {}}`, 1},
		{"duplicate custom_id", "{\"custom_id\": \"a\", \"verb\": \"chat\", \"data\": {}}\n\n{\"custom_id\": \"a\", \"verb\": \"chat\", \"data\": {}}", 3},
		{"openai wrong url", `{"custom_id": "a", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m", "input": "x"}}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "bad-" + strings.ReplaceAll(tc.name, " ", "-")
			_, err := b.Client.SubmitBatch(context.Background(), client.BatchSpec{ID: id}, strings.NewReader(tc.input))
			var le *client.BatchInputError
			if !errors.As(err, &le) || le.Line != tc.line || !errors.Is(err, client.ErrBadBatchInput) {
				t.Fatalf("error %v, want a *BatchInputError at line %d", err, tc.line)
			}
			if _, err := b.Client.Batch(context.Background(), id); !errors.Is(err, client.ErrNoBatch) {
				t.Fatalf("batch after bad input: %v", err)
			}
		})
	}
}

// Lines in the OpenAI Batch input shape run as chats, the model named by
// the body.
func TestBatch_openai_shape(t *testing.T) {
	model := newCounted()
	b := startBus(t, model, 1)
	var in bytes.Buffer
	for i := range 5 {
		fmt.Fprintf(&in, `{"custom_id": "req-%d", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "counted:echo", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "question %d"}], "temperature": 0}}`+"\n", i, i)
	}
	submit(t, b.Client, client.BatchSpec{ID: "openai", KeepBranches: true}, in.Bytes())
	end := waitEnded(t, b.Client, "openai")
	if end.Counts.Succeeded != 5 {
		t.Fatalf("ended %+v", end.Counts)
	}
	for id, r := range results(t, b.Client, "openai") {
		var v string
		_ = json.Unmarshal(r.Result.Value, &v)
		if want := "question " + strings.TrimPrefix(id, "req-"); v != want {
			t.Fatalf("%s answered %q, want %q", id, v, want)
		}
		// Kept: the item's branch is there.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		reply, err := b.Client.Do(ctx, wire.VerbBranchGet, r.BranchID, map[string]any{})
		cancel()
		if err != nil || reply.Err() != nil {
			t.Fatalf("branch %s of %s: %v %v", r.BranchID, id, err, reply.Err())
		}
	}
}

// promptModel answers with the number of messages of its prompt and the
// system message, so that a test sees what each item's branch held.
type promptModel struct{}

func (promptModel) Complete(_ context.Context, call ops.Call) (*ops.Completion, error) {
	system := ""
	if call.Messages.Len() > 0 && call.Messages.At(0).Role == "system" {
		system = call.Messages.At(0).Content
	}
	return &ops.Completion{Text: fmt.Sprintf("%d messages, system %q", call.Messages.Len(), system)}, nil
}

// Each item runs on a branch of its own cloned from the template (its
// system message), never on a shared growing branch; the branches are
// deleted once the results are stored.
func TestBatch_template_isolation(t *testing.T) {
	b := bustest.New(t, provision.Config{})
	b.StartService(t, nil, nil, map[string]ops.Provider{"prompt": promptModel{}}, worker.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reply, err := b.Client.Do(ctx, wire.VerbBranchCreate, "", map[string]any{"branch_id": "tmpl", "system": "you summarize", "chat_model": "prompt:x"})
	if err != nil || reply.Err() != nil {
		t.Fatalf("template: %v %v", err, reply.Err())
	}
	var in bytes.Buffer
	for i := range 30 {
		fmt.Fprintf(&in, `{"custom_id": "d%d", "verb": "communicate", "data": {"instruction": "doc %d", "skip_validation": true}}`+"\n", i, i)
	}
	submit(t, b.Client, client.BatchSpec{ID: "tmpl-batch", TemplateBranch: "tmpl", Concurrency: 8}, in.Bytes())
	end := waitEnded(t, b.Client, "tmpl-batch")
	if end.Counts.Succeeded != 30 {
		t.Fatalf("ended %+v", end.Counts)
	}
	for id, r := range results(t, b.Client, "tmpl-batch") {
		var v string
		_ = json.Unmarshal(r.Result.Value, &v)
		// The system message and the item's instruction, nothing else.
		if want := `2 messages, system "you summarize"`; v != want {
			t.Fatalf("%s saw %q, want %q", id, v, want)
		}
		reply, err := b.Client.Do(ctx, wire.VerbBranchGet, r.BranchID, map[string]any{})
		if err != nil || !errors.Is(reply.Err(), wire.ErrBranchNotFound) {
			t.Fatalf("branch %s of %s after the batch: %v %v, want branch_not_found", r.BranchID, id, err, reply.Err())
		}
	}
	// The template is as it was.
	reply, err = b.Client.Do(ctx, wire.VerbBranchGet, "tmpl", map[string]any{})
	if err != nil || reply.Err() != nil {
		t.Fatal(err, reply.Err())
	}
	var br struct {
		Value struct {
			Messages []json.RawMessage `json:"messages"`
		} `json:"value"`
	}
	if err := json.Unmarshal(reply.Data, &br); err != nil || len(br.Value.Messages) != 1 {
		t.Fatalf("template after the batch: %s (%v)", reply.Data, err)
	}
}

// Two batches run side by side, each with its own concurrency of the
// fleet: neither waits behind the other.
func TestBatch_two_batches_share_the_fleet(t *testing.T) {
	model := newCounted()
	b := startBus(t, model, 1)
	const conc = 8
	for _, id := range []string{"one", "two"} {
		submit(t, b.Client, client.BatchSpec{ID: id, Concurrency: conc}, jsonl(500, func(i int) string { return fmt.Sprintf("block %s %d", id, i) }))
	}
	for _, id := range []string{"one", "two"} {
		waitCounts(t, b.Client, id, id+"'s items in flight", func(c wire.BatchCounts) bool { return c.Running == conc })
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{"one", "two"} {
		bt, err := b.Client.Batch(ctx, id)
		if err != nil || bt.Counts.Running > conc {
			t.Fatalf("%s: %+v %v: more than its concurrency in flight", id, bt, err)
		}
		if _, err := b.Client.CancelBatch(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"one", "two"} {
		if end := waitEnded(t, b.Client, id); end.State != wire.BatchCanceled {
			t.Fatalf("%s ended %s", id, end.State)
		}
	}
}

// An input larger than what a pass keeps in memory is read from a
// temporary file, with the same results.
func TestBatch_input_spooled_to_a_file(t *testing.T) {
	defer batch.SetMaxInMemoryInput(1)()
	model := newCounted()
	b := startBus(t, model, 1)
	submit(t, b.Client, client.BatchSpec{ID: "spooled", Concurrency: 4}, jsonl(50, func(i int) string { return fmt.Sprintf("echo %d", i) }))
	end := waitEnded(t, b.Client, "spooled")
	if end.Counts.Succeeded != 50 || len(results(t, b.Client, "spooled")) != 50 {
		t.Fatalf("ended %+v", end.Counts)
	}
}

// Stateless items (issue 23: "or on none for stateless verbs"): a chat
// item of a batch without a template, whose branches are not kept, runs
// on no branch — no branch is created (the history stream stays empty),
// and each item is one request.
func TestBatch_stateless_items_run_on_no_branch(t *testing.T) {
	model := newCounted()
	b := startBus(t, model, 1)
	const n = 50
	var in bytes.Buffer
	for i := range n {
		fmt.Fprintf(&in, `{"custom_id": "q-%d", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "counted:echo", "messages": [{"role": "user", "content": "question %d"}]}}`+"\n", i, i)
	}
	submit(t, b.Client, client.BatchSpec{ID: "stateless", Concurrency: 8}, in.Bytes())
	end := waitEnded(t, b.Client, "stateless")
	res := results(t, b.Client, "stateless")
	if end.Counts.Succeeded != n {
		t.Fatalf("ended %s %+v; item q-0: %+v", end.State, end.Counts, res["q-0"].Error)
	}
	for id, r := range res {
		var v string
		_ = json.Unmarshal(r.Result.Value, &v)
		if want := "question " + strings.TrimPrefix(id, "q-"); v != want || r.BranchID != "" || r.Result.BranchID != "" {
			t.Fatalf("%s: %+v answered %q, want %q on no branch", id, r, v, want)
		}
	}
	if calls := len(model.snapshot()); calls != n {
		t.Fatalf("%d instructions reached the model, want %d", calls, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.New(b.NC)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "LION_HISTORY")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Fatalf("the history stream holds %d events; a stateless item creates no branch", info.State.Msgs)
	}
}
