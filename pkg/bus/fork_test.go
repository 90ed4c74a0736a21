package bus_test

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/histexport"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// branchAt is what branch.get answers for id at seq (0: the head).
func branchAt(t testing.TB, b *bustest.Bus, id string, seq uint64) history.Branch {
	t.Helper()
	var data any
	if seq != 0 {
		data = map[string]any{"at_seq": seq}
	}
	var br history.Branch
	bustest.MustResult(t, b.Do(t, "branch.get", id, data), &br)
	return br
}

// fork makes a fork of parent into id with data (at_seq, before_message).
func fork(t testing.TB, b *bustest.Bus, parent, id string, data map[string]any) history.Branch {
	t.Helper()
	d := map[string]any{"branch_id": id}
	for k, v := range data {
		d[k] = v
	}
	var f wire.BranchForked
	r := bustest.MustResult(t, b.Do(t, "branch.fork", parent, d), &f)
	if r.BranchID != id || f.BranchID != id {
		t.Fatalf("branch.fork answered branch %q (value %q), want %q", r.BranchID, f.BranchID, id)
	}
	br := branchAt(t, b, id, 0)
	if br.Fork == nil || *br.Fork != f.Fork || br.Seq != f.Seq || len(br.Messages) != f.Messages || !br.CreatedAt.Equal(f.CreatedAt) {
		t.Fatalf("branch.fork answered %+v, branch.get %+v at seq %d with %d messages", f, br.Fork, br.Seq, len(br.Messages))
	}
	return br
}

// ownMessages are the messages the branch's own history events record
// after its creation (a fork's own exchanges).
func ownMessages(t testing.TB, b *bustest.Bus, id string) []history.Message {
	t.Helper()
	var msgs []history.Message
	for _, ev := range readHistory(t, b, id, 1000, nil) {
		if ev.Type == history.EventCreated && len(ev.Messages) > 0 {
			t.Fatalf("fork %q's branch.created holds %d messages: a fork copies none", id, len(ev.Messages))
		}
		if ev.Clear {
			t.Fatalf("test branch %q clears", id)
		}
		msgs = append(msgs, ev.Messages...)
	}
	return msgs
}

// sameState checks that got is want but for what a fork has of its own
// (id, sequence, times, commits, lineage, provider session).
func sameState(t testing.TB, what string, got history.Branch, want history.Branch, extra []history.Message) {
	t.Helper()
	want.Messages = append(slices.Clone(want.Messages), extra...)
	want.Settings.ProviderSession = ""
	type state struct {
		Settings   any
		Messages   any
		ModelCalls uint64
	}
	g := state{asJSON(t, got.Settings), asJSON(t, got.Messages), got.ModelCalls}
	w := state{asJSON(t, want.Settings), asJSON(t, want.Messages), want.ModelCalls + uint64(len(extra)/2)}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %v\nwant %v", what, g, w)
	}
}

// TestBranchFork_at_several_sequences_of_a_200_exchange_branch: forks of
// a branch of 200 exchanges (with clears and another branch's events in
// between) at its first event, at several points in the middle and at
// its head, and forks of those forks: each fork's branch.get is the
// parent's branch.get at the fork point followed by the fork's own
// exchanges, at the head and at every sequence of the fork's own
// history; the parent's state does not change; each fork's branch.created
// holds no message.
func TestBranchFork_at_several_sequences_of_a_200_exchange_branch(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	const parent = "fork-parent"
	evs := pastBranch(t, b, parent, 200, 1000)
	before := branchAt(t, b, parent, 0)
	points := []uint64{evs[0].Seq, evs[len(evs)/7].Seq, evs[len(evs)/2].Seq, evs[len(evs)/2].Seq + 1, evs[len(evs)-2].Seq, 0}
	type made struct {
		id, parent string
		at         uint64
	}
	var forks []made
	for i, at := range points {
		id := fmt.Sprintf("fork-%d", i)
		data := map[string]any{}
		if at != 0 {
			data["at_seq"] = at
		}
		wantAt := branchAt(t, b, parent, at) // the head moves with each fork's record
		f := fork(t, b, parent, id, data)
		if f.Fork == nil || f.Fork.BranchID != parent || f.Fork.Seq != wantAt.Seq {
			t.Fatalf("fork %s at %d: lineage %+v, want parent %q at seq %d", id, at, f.Fork, parent, wantAt.Seq)
		}
		sameState(t, id+" as made", f, wantAt, nil)
		forks = append(forks, made{id, parent, wantAt.Seq})
	}
	// Each fork lives on; forks of the forks, after one own exchange.
	for _, f := range slices.Clone(forks) {
		bustest.MustResult(t, b.Do(t, "communicate", f.id, map[string]any{"instruction": "own of " + f.id}), nil)
		mid := branchAt(t, b, f.id, 0)
		bustest.MustResult(t, b.Do(t, "communicate", f.id, map[string]any{"instruction": "second of " + f.id}), nil)
		sub := f.id + "-sub"
		s := fork(t, b, f.id, sub, map[string]any{"at_seq": mid.Seq})
		if s.Fork == nil || s.Fork.BranchID != f.id || s.Fork.Seq != mid.Seq {
			t.Fatalf("fork %s: lineage %+v, want %q at %d", sub, s.Fork, f.id, mid.Seq)
		}
		bustest.MustResult(t, b.Do(t, "communicate", sub, map[string]any{"instruction": "own of " + sub}), nil)
		forks = append(forks, made{sub, f.id, mid.Seq})
	}
	for _, f := range forks {
		prefix := branchAt(t, b, f.parent, f.at)
		own := ownMessages(t, b, f.id)
		if len(own) == 0 {
			t.Fatalf("fork %s recorded nothing of its own", f.id)
		}
		sameState(t, f.id+" at its head", branchAt(t, b, f.id, 0), prefix, own)
		// At every sequence of its own history, the fork is the prefix
		// plus its own messages up to there.
		var upto []history.Message
		for _, ev := range readHistory(t, b, f.id, 1000, nil) {
			upto = append(upto, ev.Messages...)
			sameState(t, fmt.Sprintf("%s at_seq %d", f.id, ev.Seq), branchAt(t, b, f.id, ev.Seq), prefix, upto)
		}
	}
	after := branchAt(t, b, parent, 0)
	if !reflect.DeepEqual(asJSON(t, after.Messages), asJSON(t, before.Messages)) || !reflect.DeepEqual(asJSON(t, after.Settings), asJSON(t, before.Settings)) || after.ModelCalls != before.ModelCalls {
		t.Fatal("the parent's state changed with its forks")
	}
}

// promptRecorder is a model that answers every call with "answer N"
// and records the conversation it was sent.
type promptRecorder struct {
	mu    sync.Mutex
	calls map[string][]ops.ChatMessage // by instruction
	n     int
}

func (p *promptRecorder) Complete(_ context.Context, call ops.Call) (*ops.Completion, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	p.calls[call.BranchID+"/"+call.Instruction] = call.Messages.Slice()
	return &ops.Completion{Text: fmt.Sprintf("answer %d", p.n)}, nil
}

func (p *promptRecorder) sent(branch, instruction string) []ops.ChatMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[branch+"/"+instruction]
}

// TestBranchFork_communicate_sees_exactly_the_prefix: a communicate on
// a fork made after exchange k of a branch sends the model the very
// conversation the branch's exchange k+1 was sent; one on a fork of that
// fork, the prefix and the fork's own exchange.
func TestBranchFork_communicate_sees_exactly_the_prefix(t *testing.T) {
	t.Parallel()
	model := &promptRecorder{calls: map[string][]ops.ChatMessage{}}
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, map[string]ops.Provider{"rec": model}, worker.Config{})
	const parent = "prefix-parent"
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{"branch_id": parent, "system": "be brief", "chat_model": "rec:m"}), nil)
	var seqs []uint64
	for i := range 6 {
		bustest.MustResult(t, b.Do(t, "communicate", parent, map[string]any{"instruction": fmt.Sprintf("q%d", i)}), nil)
		seqs = append(seqs, branchAt(t, b, parent, 0).Seq)
	}
	for k := range 5 {
		id := fmt.Sprintf("prefix-fork-%d", k)
		fork(t, b, parent, id, map[string]any{"at_seq": seqs[k]})
		q := fmt.Sprintf("q%d", k+1)
		bustest.MustResult(t, b.Do(t, "communicate", id, map[string]any{"instruction": q}), nil)
		got, want := model.sent(id, q), model.sent(parent, q)
		if len(want) != 2*(k+2) || !reflect.DeepEqual(got, want) {
			t.Fatalf("fork after exchange %d was sent %d messages %v,\nthe parent's exchange %d %d: %v", k, len(got), got, k+1, len(want), want)
		}
		// A fork of the fork at its head: the prefix and the fork's exchange.
		sub := id + "-sub"
		fork(t, b, id, sub, nil)
		bustest.MustResult(t, b.Do(t, "communicate", sub, map[string]any{"instruction": "next"}), nil)
		onFork := branchAt(t, b, id, 0)
		got = model.sent(sub, "next")
		if len(got) != len(onFork.Messages)+1 || !reflect.DeepEqual(got[:len(want)], want) {
			t.Fatalf("fork of fork %s was sent %v; its parent holds %d messages", sub, got, len(onFork.Messages))
		}
	}
}

// TestBranchFork_before_message_and_edit_and_resend: a fork before an
// exchange's instruction holds what came before that exchange; the
// client's EditAndResend sends the edited instruction there, leaving the
// branch as it was; bad fork points are clear errors.
func TestBranchFork_before_message_and_edit_and_resend(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	const parent = "edit-parent"
	b.CreateBranch(t, parent)
	var afterFirst uint64
	for i := range 3 {
		bustest.MustResult(t, b.Do(t, "communicate", parent, map[string]any{"instruction": fmt.Sprintf("question %d", i)}), nil)
		if i == 0 {
			afterFirst = branchAt(t, b, parent, 0).Seq
		}
	}
	head := branchAt(t, b, parent, 0)
	second := head.Messages[3] // system, q0, a0, q1, ...
	if second.Role != history.RoleUser {
		t.Fatalf("message 3 is a %s message", second.Role)
	}
	f := fork(t, b, parent, "edit-fork", map[string]any{"before_message": second.ID})
	sameState(t, "fork before the second question", f, branchAt(t, b, parent, afterFirst), nil)
	if f.Fork.Seq != afterFirst {
		t.Fatalf("fork before message at seq %d, want %d", f.Fork.Seq, afterFirst)
	}

	ctx := bustest.Ctx(t)
	id, res, err := b.Client.EditAndResend(ctx, parent, second.ID, "edited", wire.CommunicateRequest{ChatRequest: wire.ChatRequest{Turn: wire.Turn{Prompt: wire.Prompt{Instruction: "question 1, edited"}}}})
	if err != nil || id != "edited" || res == nil {
		t.Fatalf("EditAndResend: %q %v", id, err)
	}
	edited := branchAt(t, b, "edited", 0)
	if len(edited.Messages) != 5 || edited.Messages[3].Content["instruction"] != "question 1, edited" {
		t.Fatalf("edited branch holds %v", edited.Messages)
	}
	sameState(t, "the edited branch", edited, branchAt(t, b, parent, afterFirst), edited.Messages[3:])
	if got := branchAt(t, b, parent, 0); !reflect.DeepEqual(asJSON(t, got.Messages), asJSON(t, head.Messages)) {
		t.Fatal("edit and resend changed the branch")
	}

	for _, c := range []struct {
		name string
		data map[string]any
		code ops.Code
	}{
		{"an answer", map[string]any{"before_message": head.Messages[2].ID}, ops.CodeInvalidRequest},
		{"the system message", map[string]any{"before_message": head.Messages[0].ID}, ops.CodeInvalidRequest},
		{"no such message", map[string]any{"before_message": "nope"}, ops.CodeInvalidRequest},
		{"beyond the head", map[string]any{"at_seq": head.Seq + 1000}, ops.CodeInvalidRequest},
		{"both points", map[string]any{"at_seq": afterFirst, "before_message": second.ID}, ops.CodeInvalidRequest},
		{"itself", map[string]any{"branch_id": parent}, ops.CodeInvalidRequest},
		{"an existing branch", map[string]any{"branch_id": "edited"}, ops.CodeBranchExists},
	} {
		d := map[string]any{"branch_id": "bad-fork"}
		for k, v := range c.data {
			d[k] = v
		}
		if got := bustest.RemoteCode(t, b.Do(t, "branch.fork", parent, d)); got != c.code {
			t.Errorf("fork at %s: code %q, want %q", c.name, got, c.code)
		}
	}
	if got := bustest.RemoteCode(t, b.Do(t, "branch.fork", "no-such-branch", map[string]any{"branch_id": "x"})); got != ops.CodeBranchNotFound {
		t.Errorf("fork of a missing branch: code %q", got)
	}
}

// TestBranchForks_lists_the_forks_and_the_ancestry: branch.forks lists
// every fork made of a branch (paged), each once, with its fork point;
// a fork's branch.get names its parent, and BranchAncestry walks up to
// the root; a redelivered branch.fork makes nothing twice.
func TestBranchForks_lists_the_forks_and_the_ancestry(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	const root = "lineage-root"
	b.CreateBranch(t, root)
	want := map[string]uint64{}
	for i := range 5 {
		bustest.MustResult(t, b.Do(t, "communicate", root, map[string]any{"instruction": fmt.Sprintf("q%d", i)}), nil)
		id := fmt.Sprintf("lineage-%d", i)
		want[id] = fork(t, b, root, id, nil).Fork.Seq
	}
	ctx := bustest.Ctx(t)
	// Redelivery: the same request id again makes no second fork.
	r1 := b.Do(t, "branch.fork", root, map[string]any{"branch_id": "lineage-again"}, client.WithID("fork-once"))
	r2 := b.Do(t, "branch.fork", root, map[string]any{"branch_id": "lineage-again"}, client.WithID("fork-once"))
	var f1, f2 wire.BranchForked
	bustest.MustResult(t, r1, &f1)
	bustest.MustResult(t, r2, &f2)
	if !reflect.DeepEqual(asJSON(t, f1), asJSON(t, f2)) {
		t.Fatalf("a redelivered fork answered another branch")
	}
	want["lineage-again"] = f1.Fork.Seq

	got := map[string]uint64{}
	var after uint64
	for pages := 0; ; pages++ {
		res, err := b.Client.BranchForks(ctx, root, wire.BranchForksRequest{After: after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range res.Value.Forks {
			if _, dup := got[f.BranchID]; dup {
				t.Fatalf("fork %s listed twice", f.BranchID)
			}
			got[f.BranchID] = f.Seq
		}
		if !res.Value.More {
			break
		}
		after = res.Value.Next
	}
	all, err := b.Client.AllForks(ctx, root)
	if err != nil || len(all) != len(want) {
		t.Fatalf("AllForks: %d forks, %v", len(all), err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("branch.forks listed %v, want %v", got, want)
	}

	fork(t, b, "lineage-2", "lineage-2-a", nil)
	fork(t, b, "lineage-2-a", "lineage-2-a-b", nil)
	line, err := b.Client.BranchAncestry(ctx, "lineage-2-a-b")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range line {
		names = append(names, p.BranchID)
	}
	if !slices.Equal(names, []string{"lineage-2-a", "lineage-2", root}) {
		t.Fatalf("ancestry %v", names)
	}
	if line, err := b.Client.BranchAncestry(ctx, root); err != nil || len(line) != 0 {
		t.Fatalf("ancestry of the root: %v %v", line, err)
	}
}

// TestBranchFork_export_of_a_parent_and_of_a_fork: a parent's export
// holds its branch.forked records and imports on a second server to the
// same branch; a fork's export holds its own events, and imported where
// its parent was imported under the same id, folds to the same fork.
func TestBranchFork_export_of_a_parent_and_of_a_fork(t *testing.T) {
	t.Parallel()
	src := bustest.New(t, provision.Config{})
	src.StartWorker(t, nil, nil, nil, worker.Config{})
	dst := bustest.New(t, provision.Config{})
	dst.StartWorker(t, nil, nil, nil, worker.Config{})
	ctx := bustest.Ctx(t)
	src.CreateBranch(t, "xp")
	for i := range 3 {
		bustest.MustResult(t, src.Do(t, "communicate", "xp", map[string]any{"instruction": fmt.Sprintf("q%d", i)}), nil)
	}
	fork(t, src, "xp", "xp-fork", nil)
	bustest.MustResult(t, src.Do(t, "communicate", "xp-fork", map[string]any{"instruction": "on the fork"}), nil)
	move := func(id string) {
		t.Helper()
		var file bytes.Buffer
		if _, err := src.Client.ExportBranch(ctx, id, &file, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := dst.Client.ImportBranch(ctx, &file, id, client.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	move("xp")
	forked := 0
	for _, ev := range readHistory(t, dst, "xp", 1000, nil) {
		if ev.Type == history.EventForked && ev.Fork != nil && ev.Fork.BranchID == "xp-fork" {
			forked++
		}
	}
	if forked != 1 {
		t.Fatalf("the imported parent holds %d records of its fork", forked)
	}
	sameState(t, "the imported parent", branchAt(t, dst, "xp", 0), branchAt(t, src, "xp", 0), nil)
	// A fork exports whole: its branch.created holds the prefix instead
	// of naming the parent, so the export imports anywhere, also where
	// the parent is not, to the fork's state (without its lineage, a
	// fact of the source cluster). So does a fork of a fork.
	fork(t, src, "xp-fork", "xp-fork2", nil)
	bustest.MustResult(t, src.Do(t, "communicate", "xp-fork2", map[string]any{"instruction": "on the fork of the fork"}), nil)
	other := bustest.New(t, provision.Config{})
	other.StartWorker(t, nil, nil, nil, worker.Config{})
	other.CreateBranch(t, "resident") // other sequences
	for _, id := range []string{"xp-fork", "xp-fork2"} {
		var file bytes.Buffer
		if _, err := src.Client.ExportBranch(ctx, id, &file, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := histexport.Verify(bytes.NewReader(file.Bytes())); err != nil {
			t.Fatalf("export of %s: %v", id, err)
		}
		if _, err := other.Client.ImportBranch(ctx, &file, id, client.ImportOptions{}); err != nil {
			t.Fatalf("import of %s: %v", id, err)
		}
		want, got := branchAt(t, src, id, 0), branchAt(t, other, id, 0)
		if want.Fork == nil || got.Fork != nil {
			t.Fatalf("%s: lineage %+v at the source, %+v imported", id, want.Fork, got.Fork)
		}
		if got.Commits.Len() != want.Commits.Len() {
			t.Fatalf("%s: %d commits imported, %d at the source", id, got.Commits.Len(), want.Commits.Len())
		}
		strip := func(b history.Branch) any {
			m := asJSON(t, b).(map[string]any)
			delete(m, "seq")
			delete(m, "commits")
			delete(m, "fork")
			return m
		}
		if !reflect.DeepEqual(strip(got), strip(want)) {
			t.Fatalf("%s imported on another server:\n got %v\nwant %v", id, strip(got), strip(want))
		}
	}
}
