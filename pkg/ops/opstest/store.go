// Package opstest holds test helpers for implementations of the pkg/ops
// interfaces, chiefly a conformance suite for [ops.Store].
package opstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// TestStore runs the [ops.Store] conformance suite. newStore must return a
// fresh, empty store for each call; it may register cleanups on t. Each
// subtest uses its own branch ids, so a store may also be shared.
//
// The suite checks: create and load, create twice (ErrBranchExists),
// missing branches (ErrBranchNotFound from every method), append order and
// increasing sequences, concurrent appends all landing, a duplicate request
// id (ErrAlreadyCommitted, no doubled messages), a request's parked calls
// (one EventApprovalRequested per approval, a state unchanged but its
// sequence), clone-style creation with
// messages, clear, history paging and limits, replay equivalence, returned branches
// that stay as they were returned, and delete (then re-create).
func TestStore(t *testing.T, newStore func(t *testing.T) history.Store) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s history.Store)
	}{
		{"create_and_load", testCreateAndLoad},
		{"create_twice", testCreateTwice},
		{"missing_branch", testMissingBranch},
		{"append_order", testAppendOrder},
		{"concurrent_appends", testConcurrentAppends},
		{"duplicate_request", testDuplicateRequest},
		{"parked_calls", testParkedCalls},
		{"create_with_messages", testCreateWithMessages},
		{"clear", testClear},
		{"history_paging", testHistoryPaging},
		{"replay_matches_load", testReplayMatchesLoad},
		{"stable_branches", testStableBranches},
		{"delete", testDelete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

// ctx returns a context bounded for one store test.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at returns a deterministic, millisecond-precise UTC time.
func at(i int) time.Time { return epoch.Add(time.Duration(i) * time.Second) }

// CreatedEvent returns an EventCreated for branch id with a system message.
func CreatedEvent(id, requestID string) history.Event {
	ref := history.ModelRef{Provider: "scripted", Model: "echo"}
	return history.Event{
		Type: history.EventCreated, RequestID: requestID, Time: at(0), BranchID: id,
		Settings: &history.Settings{System: "be brief", ChatModel: &ref, Tools: []string{"add"}},
		Messages: []history.Message{msg("sys-"+id, history.KindSystem, history.RoleSystem, "system_message", "be brief", 0)},
	}
}

// MessagesEvent returns an EventMessages recording an instruction and a
// response whose texts are derived from requestID.
func MessagesEvent(id, requestID string, i int) history.Event {
	return history.Event{
		Type: history.EventMessages, RequestID: requestID, Time: at(i), BranchID: id, ModelCalls: 1,
		Messages: []history.Message{
			msg("ins-"+requestID, history.KindInstruction, history.RoleUser, "instruction", "q "+requestID, i),
			msg("res-"+requestID, history.KindAssistantResponse, history.RoleAssistant, "assistant_response", "a "+requestID, i),
		},
		Result: json.RawMessage(fmt.Sprintf(`{"value":%q,"duration_ms":1}`, "a "+requestID)),
	}
}

func msg(id string, k history.Kind, r history.Role, key, text string, i int) history.Message {
	return history.Message{ID: id, Kind: k, Role: r, CreatedAt: at(i), Content: map[string]any{key: text}}
}

var idCounter atomic.Uint64

// branchID returns a branch id unique within the process and across runs.
func branchID(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("conf-%d-%d", time.Now().UnixNano(), idCounter.Add(1))
}

func mustCreate(t *testing.T, s history.Store, id string) *history.Branch {
	t.Helper()
	b, err := s.Create(ctx(t), id, CreatedEvent(id, "create-"+id))
	if err != nil {
		t.Fatalf("Create(%q): %v", id, err)
	}
	return b
}

func mustAppend(t *testing.T, s history.Store, id string, ev history.Event) *history.Branch {
	t.Helper()
	b, err := s.Append(ctx(t), id, ev)
	if err != nil {
		t.Fatalf("Append(%q, %s %s): %v", id, ev.Type, ev.RequestID, err)
	}
	return b
}

func texts(b *history.Branch) []string {
	var out []string
	for _, m := range b.Messages {
		for _, k := range []string{"system_message", "instruction", "assistant_response"} {
			if v, ok := m.Content[k].(string); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func testCreateAndLoad(t *testing.T, s history.Store) {
	id := branchID(t)
	b := mustCreate(t, s, id)
	if b.ID != id || b.Seq == 0 || b.Settings.System != "be brief" || len(b.Messages) != 1 {
		t.Fatalf("Create returned %+v; want id %q, seq > 0, system and one message", b, id)
	}
	if b.Settings.ChatModel == nil || b.Settings.ChatModel.String() != "scripted:echo" {
		t.Fatalf("chat model = %v, want scripted:echo", b.Settings.ChatModel)
	}
	if !b.CreatedAt.Equal(at(0)) {
		t.Fatalf("CreatedAt = %v, want %v", b.CreatedAt, at(0))
	}
	l, err := s.Load(ctx(t), id)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if l.ID != id || l.Seq != b.Seq || !equalStrings(texts(l), texts(b)) {
		t.Fatalf("Load = %+v, want the created branch %+v", l, b)
	}
}

func testCreateTwice(t *testing.T, s history.Store) {
	id := branchID(t)
	mustCreate(t, s, id)
	_, err := s.Create(ctx(t), id, CreatedEvent(id, "other-request"))
	if !errors.Is(err, history.ErrBranchExists) {
		t.Fatalf("second Create: err = %v, want ErrBranchExists", err)
	}
	evs, err := s.History(ctx(t), id, 0, 0)
	if err != nil || len(evs) != 1 || evs[0].RequestID != "create-"+id {
		t.Fatalf("history after second Create = %v, %v; want only the first created event", evs, err)
	}
}

func testMissingBranch(t *testing.T, s history.Store) {
	id := branchID(t) + "-missing"
	if _, err := s.Load(ctx(t), id); !errors.Is(err, history.ErrBranchNotFound) {
		t.Errorf("Load: err = %v, want ErrBranchNotFound", err)
	}
	if _, err := s.Append(ctx(t), id, MessagesEvent(id, "r1", 1)); !errors.Is(err, history.ErrBranchNotFound) {
		t.Errorf("Append: err = %v, want ErrBranchNotFound", err)
	}
	if _, err := s.History(ctx(t), id, 0, 10); !errors.Is(err, history.ErrBranchNotFound) {
		t.Errorf("History: err = %v, want ErrBranchNotFound", err)
	}
	if err := s.Delete(ctx(t), id); !errors.Is(err, history.ErrBranchNotFound) {
		t.Errorf("Delete: err = %v, want ErrBranchNotFound", err)
	}
}

func testAppendOrder(t *testing.T, s history.Store) {
	id := branchID(t)
	prev := mustCreate(t, s, id).Seq
	want := []string{"be brief"}
	for i := 1; i <= 5; i++ {
		rid := fmt.Sprintf("r%d", i)
		b := mustAppend(t, s, id, MessagesEvent(id, rid, i))
		if b.Seq <= prev {
			t.Fatalf("append %d: seq %d not above previous %d", i, b.Seq, prev)
		}
		if seq, ok := b.Commits.Seq(rid); !ok || seq != b.Seq {
			t.Fatalf("append %d: Commits.Seq(%q) = %d, %t, want %d", i, rid, seq, ok, b.Seq)
		}
		if b.ModelCalls != uint64(i) {
			t.Fatalf("append %d: ModelCalls = %d, want %d", i, b.ModelCalls, i)
		}
		prev = b.Seq
		want = append(want, "q "+rid, "a "+rid)
	}
	b, err := s.Load(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(b); !equalStrings(got, want) {
		t.Fatalf("messages = %q, want %q", got, want)
	}
	if !b.UpdatedAt.Equal(at(5)) {
		t.Fatalf("UpdatedAt = %v, want %v", b.UpdatedAt, at(5))
	}
}

func testConcurrentAppends(t *testing.T, s history.Store) {
	id := branchID(t)
	mustCreate(t, s, id)
	const writers, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	c := ctx(t)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				rid := fmt.Sprintf("w%d-%d", w, i)
				if _, err := s.Append(c, id, MessagesEvent(id, rid, 1+i)); err != nil {
					errs <- fmt.Errorf("%s: %w", rid, err)
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	b, err := s.Load(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(b.Messages), 1+2*writers*each; got != want {
		t.Fatalf("messages = %d, want %d", got, want)
	}
	if b.Commits.Len() != writers*each {
		t.Fatalf("commits = %d, want %d", b.Commits.Len(), writers*each)
	}
	evs, err := s.History(ctx(t), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1+writers*each {
		t.Fatalf("history = %d events, want %d", len(evs), 1+writers*each)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq <= evs[i-1].Seq {
			t.Fatalf("history seq %d after %d", evs[i].Seq, evs[i-1].Seq)
		}
	}
}

func testDuplicateRequest(t *testing.T, s history.Store) {
	id := branchID(t)
	mustCreate(t, s, id)
	first := mustAppend(t, s, id, MessagesEvent(id, "dup", 1))
	b, err := s.Append(ctx(t), id, MessagesEvent(id, "dup", 2))
	if !errors.Is(err, history.ErrAlreadyCommitted) {
		t.Fatalf("duplicate Append: err = %v, want ErrAlreadyCommitted", err)
	}
	if b == nil || commitSeq(b, "dup") != commitSeq(first, "dup") {
		t.Fatalf("duplicate Append returned %+v; want the branch with the first commit (seq %d)", b, commitSeq(first, "dup"))
	}
	l, err := s.Load(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Messages) != 3 || l.ModelCalls != 1 {
		t.Fatalf("after duplicate: %d messages, %d model calls; want 3 and 1", len(l.Messages), l.ModelCalls)
	}
	// The same request id with another event type is a different key.
	if _, err := s.Append(ctx(t), id, history.Event{Type: history.EventCleared, RequestID: "dup", Time: at(3)}); err != nil {
		t.Fatalf("clear with a request id used by a messages event: %v", err)
	}
}

// testParkedCalls: a request that parks on two calls records both (the
// key holds the approval id), the same call parked again is
// ErrAlreadyCommitted, and neither changes the branch's messages, its
// commits or its model calls.
func testParkedCalls(t *testing.T, s history.Store) {
	id := branchID(t)
	mustCreate(t, s, id)
	before := mustAppend(t, s, id, MessagesEvent(id, "r1", 1))
	parked := func(approval string, i int) history.Event {
		return history.Event{Type: history.EventApprovalRequested, RequestID: "r2", Time: at(i), BranchID: id, Approval: &wire.ApprovalRequest{
			ID: approval, Tool: "add", IdempotencyKey: "r2#" + approval, Arguments: map[string]any{"x": "1"},
			ArgumentsDigest: wire.ArgumentsDigest(map[string]any{"x": "1"}), Deadline: at(100), OnDeadline: "deny", Approvers: "lion.approval.answer.add.*.<user>",
		}}
	}
	a := mustAppend(t, s, id, parked("ap-1", 2))
	if _, err := s.Append(ctx(t), id, parked("ap-1", 3)); !errors.Is(err, history.ErrAlreadyCommitted) {
		t.Fatalf("the same call parked again: err = %v, want ErrAlreadyCommitted", err)
	}
	b := mustAppend(t, s, id, parked("ap-2", 4))
	if !(before.Seq < a.Seq && a.Seq < b.Seq) || !equalStrings(texts(b), texts(before)) || b.ModelCalls != before.ModelCalls || commitSeq(b, "r2") != 0 {
		t.Fatalf("after two parked calls: seq %d→%d→%d, texts %q (were %q), model calls %d, commit of r2 %d",
			before.Seq, a.Seq, b.Seq, texts(b), texts(before), b.ModelCalls, commitSeq(b, "r2"))
	}
	evs, err := s.History(ctx(t), id, before.Seq, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Approval == nil || evs[0].Approval.ID != "ap-1" || evs[1].Approval == nil || evs[1].Approval.ID != "ap-2" ||
		evs[1].Approval.Arguments["x"] != "1" || !evs[1].Approval.Deadline.Equal(at(100)) {
		t.Fatalf("history after the parked calls: %+v", evs)
	}
}

func testCreateWithMessages(t *testing.T, s history.Store) {
	src := branchID(t)
	mustCreate(t, s, src)
	b := mustAppend(t, s, src, MessagesEvent(src, "r1", 1))
	dst := src + "-clone"
	ev := history.Event{
		Type: history.EventCreated, RequestID: "clone-" + dst, Time: at(2), BranchID: dst,
		Settings: &b.Settings, Messages: b.Messages, ModelCalls: b.ModelCalls,
	}
	c, err := s.Create(ctx(t), dst, ev)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != dst || !equalStrings(texts(c), texts(b)) || c.ModelCalls != 1 {
		t.Fatalf("clone = %q %q (calls %d), want %q %q (calls 1)", c.ID, texts(c), c.ModelCalls, dst, texts(b))
	}
	// The source is unchanged by appends to the clone.
	mustAppend(t, s, dst, MessagesEvent(dst, "r2", 3))
	l, err := s.Load(ctx(t), src)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Messages) != 3 {
		t.Fatalf("source has %d messages after appending to the clone, want 3", len(l.Messages))
	}
}

func testClear(t *testing.T, s history.Store) {
	id := branchID(t)
	mustCreate(t, s, id)
	mustAppend(t, s, id, MessagesEvent(id, "r1", 1))
	b := mustAppend(t, s, id, history.Event{Type: history.EventCleared, RequestID: "clear-1", Time: at(2)})
	if got := texts(b); !equalStrings(got, []string{"be brief"}) {
		t.Fatalf("after clear: %q, want only the system message", got)
	}
	if commitSeq(b, "r1") == 0 || b.ModelCalls != 1 {
		t.Fatalf("clear dropped commits or model calls: %v, %d", b.Commits, b.ModelCalls)
	}
	if _, err := s.Append(ctx(t), id, history.Event{Type: history.EventCleared, RequestID: "clear-1", Time: at(3)}); !errors.Is(err, history.ErrAlreadyCommitted) {
		t.Fatalf("repeated clear: err = %v, want ErrAlreadyCommitted", err)
	}
	// Clear together with new messages in one event.
	ev := MessagesEvent(id, "r2", 4)
	ev.Clear = true
	mustAppend(t, s, id, MessagesEvent(id, "r1b", 3))
	b = mustAppend(t, s, id, ev)
	if got := texts(b); !equalStrings(got, []string{"be brief", "q r2", "a r2"}) {
		t.Fatalf("after messages with Clear: %q", got)
	}
}

func testHistoryPaging(t *testing.T, s history.Store) {
	id := branchID(t)
	mustCreate(t, s, id)
	for i := 1; i <= 6; i++ {
		mustAppend(t, s, id, MessagesEvent(id, fmt.Sprintf("r%d", i), i))
	}
	all, err := s.History(ctx(t), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 7 || all[0].Type != history.EventCreated {
		t.Fatalf("full history = %d events (first %v), want 7 starting with created", len(all), all[0].Type)
	}
	var paged []history.Event
	after := uint64(0)
	for pages := 0; pages < 10; pages++ {
		evs, err := s.History(ctx(t), id, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > 3 {
			t.Fatalf("page of %d events with limit 3", len(evs))
		}
		if len(evs) == 0 {
			break
		}
		paged = append(paged, evs...)
		after = evs[len(evs)-1].Seq
	}
	if len(paged) != len(all) {
		t.Fatalf("paged history = %d events, want %d", len(paged), len(all))
	}
	for i := range all {
		if paged[i].Seq != all[i].Seq || paged[i].RequestID != all[i].RequestID {
			t.Fatalf("page event %d = %d/%s, want %d/%s", i, paged[i].Seq, paged[i].RequestID, all[i].Seq, all[i].RequestID)
		}
	}
	last, err := s.History(ctx(t), id, all[len(all)-1].Seq, 10)
	if err != nil || len(last) != 0 {
		t.Fatalf("history after the last event = %v, %v; want none", last, err)
	}
	if string(all[1].Result) == "" {
		t.Fatalf("history lost the event result")
	}
}

func testReplayMatchesLoad(t *testing.T, s history.Store) {
	id := branchID(t)
	mustCreate(t, s, id)
	mustAppend(t, s, id, MessagesEvent(id, "r1", 1))
	mustAppend(t, s, id, history.Event{Type: history.EventUpdated, RequestID: "u1", Time: at(2), Settings: &history.Settings{ProviderSession: "sess-1"}})
	mustAppend(t, s, id, MessagesEvent(id, "r2", 3))
	evs, err := s.History(ctx(t), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := history.Replay(evs)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Load(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != l.ID || r.Seq != l.Seq || r.ModelCalls != l.ModelCalls || !r.CreatedAt.Equal(l.CreatedAt) ||
		!r.UpdatedAt.Equal(l.UpdatedAt) || r.Settings.ProviderSession != l.Settings.ProviderSession ||
		!equalStrings(texts(r), texts(l)) || fmt.Sprint(r.Commits) != fmt.Sprint(l.Commits) {
		t.Fatalf("replayed branch differs from loaded branch:\nreplay %+v\nload   %+v", r, l)
	}
	for i := range r.Messages {
		if r.Messages[i].ID != l.Messages[i].ID || r.Messages[i].Kind != l.Messages[i].Kind {
			t.Fatalf("message %d: replay %+v, load %+v", i, r.Messages[i], l.Messages[i])
		}
	}
	if l.Settings.ProviderSession != "sess-1" {
		t.Fatalf("update not applied: %+v", l.Settings)
	}
}

// testStableBranches checks the sharing rules of [ops.Store]: a returned
// branch is read-only to its caller, but appending to its Messages never
// reaches the store, and nothing the store does later (appends, a new
// system message, a clear) changes a branch it returned earlier.
func testStableBranches(t *testing.T, s history.Store) {
	id := branchID(t)
	mustCreate(t, s, id)
	l, err := s.Load(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(l.Messages, history.Message{ID: "x"})
	l.Messages = append(l.Messages, history.Message{ID: "y"})
	l2, err := s.Load(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(l2.Messages) != 1 {
		t.Fatalf("store state changed by appending to a returned branch: %+v", l2.Messages)
	}
	before := fmt.Sprintf("%+v", *l2)
	if _, err := s.Append(ctx(t), id, MessagesEvent(id, "r1", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx(t), id, history.Event{Type: history.EventUpdated, RequestID: "u1", Time: epoch, Settings: &history.Settings{System: "be long"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx(t), id, MessagesEvent(id, "r2", 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx(t), id, history.Event{Type: history.EventCleared, RequestID: "c1", Time: epoch}); err != nil {
		t.Fatal(err)
	}
	if after := fmt.Sprintf("%+v", *l2); after != before {
		t.Fatalf("a returned branch changed when the store changed:\nbefore %s\nafter  %s", before, after)
	}
	l3, err := s.Load(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(l3.Messages) != 1 || l3.Messages[0].Content["system_message"] != "be long" {
		t.Fatalf("branch after update and clear: %+v", l3.Messages)
	}
}

func testDelete(t *testing.T, s history.Store) {
	id := branchID(t)
	mustCreate(t, s, id)
	mustAppend(t, s, id, MessagesEvent(id, "r1", 1))
	if err := s.Delete(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx(t), id); !errors.Is(err, history.ErrBranchNotFound) {
		t.Fatalf("Load after Delete: err = %v, want ErrBranchNotFound", err)
	}
	if _, err := s.History(ctx(t), id, 0, 0); !errors.Is(err, history.ErrBranchNotFound) {
		t.Fatalf("History after Delete: err = %v, want ErrBranchNotFound", err)
	}
	b := mustCreate(t, s, id)
	if len(b.Messages) != 1 || b.Commits.Len() != 0 {
		t.Fatalf("re-created branch carries old state: %+v", b)
	}
}

// commitSeq returns the sequence b remembers for request id, 0 if none.
func commitSeq(b *history.Branch, id string) uint64 {
	seq, _ := b.Commits.Seq(id)
	return seq
}
