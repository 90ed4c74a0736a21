package history_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

func withSeq(ev history.Event, seq uint64) history.Event {
	ev.Seq = seq
	return ev
}

func messageTexts(b *history.Branch) []string {
	var out []string
	for _, m := range b.Messages {
		for _, v := range m.Content {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func TestBranch_Apply(t *testing.T) {
	created := opstest.CreatedEvent("b1", "c")
	tests := []struct {
		name       string
		events     []history.Event
		wantErr    error
		wantTexts  []string
		wantSeq    uint64
		wantCalls  uint64
		wantCommit []string
	}{
		{
			name:      "created only",
			events:    []history.Event{withSeq(created, 1)},
			wantTexts: []string{"be brief"}, wantSeq: 1,
		},
		{
			name:      "messages append in order",
			events:    []history.Event{withSeq(created, 1), withSeq(opstest.MessagesEvent("b1", "r1", 1), 4), withSeq(opstest.MessagesEvent("b1", "r2", 2), 9)},
			wantTexts: []string{"be brief", "q r1", "a r1", "q r2", "a r2"}, wantSeq: 9, wantCalls: 2,
			wantCommit: []string{"r1", "r2"},
		},
		{
			name:      "duplicate request never doubles messages",
			events:    []history.Event{withSeq(created, 1), withSeq(opstest.MessagesEvent("b1", "r1", 1), 2), withSeq(opstest.MessagesEvent("b1", "r1", 2), 3)},
			wantTexts: []string{"be brief", "q r1", "a r1"}, wantSeq: 3, wantCalls: 1,
			wantCommit: []string{"r1"},
		},
		{
			name:      "cleared keeps the system message",
			events:    []history.Event{withSeq(created, 1), withSeq(opstest.MessagesEvent("b1", "r1", 1), 2), {Seq: 3, Type: history.EventCleared, RequestID: "x"}},
			wantTexts: []string{"be brief"}, wantSeq: 3, wantCalls: 1, wantCommit: []string{"r1"},
		},
		{
			name: "messages with clear",
			events: []history.Event{withSeq(created, 1), withSeq(opstest.MessagesEvent("b1", "r1", 1), 2), func() history.Event {
				ev := withSeq(opstest.MessagesEvent("b1", "r2", 2), 3)
				ev.Clear = true
				return ev
			}()},
			wantTexts: []string{"be brief", "q r2", "a r2"}, wantSeq: 3, wantCalls: 2, wantCommit: []string{"r1", "r2"},
		},
		{
			name:      "updated replaces the system message",
			events:    []history.Event{withSeq(created, 1), {Seq: 2, Type: history.EventUpdated, Settings: &history.Settings{System: "be long"}}},
			wantTexts: []string{"be long"}, wantSeq: 2,
		},
		{
			name:    "sequence must increase",
			events:  []history.Event{withSeq(created, 5), withSeq(opstest.MessagesEvent("b1", "r1", 1), 5)},
			wantErr: history.ErrEventOrder,
		},
		{
			name:    "zero sequence",
			events:  []history.Event{created},
			wantErr: history.ErrEventOrder,
		},
		{
			name:    "created twice",
			events:  []history.Event{withSeq(created, 1), withSeq(created, 2)},
			wantErr: history.ErrEventOrder,
		},
		{
			name:    "messages before created",
			events:  []history.Event{withSeq(opstest.MessagesEvent("b1", "r1", 1), 1)},
			wantErr: history.ErrEventOrder,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := history.Replay(tt.events)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.ID != "b1" {
				t.Errorf("ID = %q, want b1", b.ID)
			}
			if got := messageTexts(b); fmt.Sprint(got) != fmt.Sprint(tt.wantTexts) {
				t.Errorf("messages = %q, want %q", got, tt.wantTexts)
			}
			if b.Seq != tt.wantSeq || b.ModelCalls != tt.wantCalls {
				t.Errorf("seq, calls = %d, %d; want %d, %d", b.Seq, b.ModelCalls, tt.wantSeq, tt.wantCalls)
			}
			if b.Commits.Len() != len(tt.wantCommit) {
				t.Errorf("commits = %v, want keys %v", b.Commits, tt.wantCommit)
			}
			for _, c := range tt.wantCommit {
				if seq, _ := b.Commits.Seq(c); seq == 0 {
					t.Errorf("commit %q missing from %v", c, b.Commits)
				}
			}
		})
	}
}

func TestBranch_Apply_commits_are_bounded(t *testing.T) {
	b := &history.Branch{}
	if err := b.Apply(withSeq(opstest.CreatedEvent("b1", "c"), 1)); err != nil {
		t.Fatal(err)
	}
	n := history.MaxRememberedCommits + 10
	for i := 0; i < n; i++ {
		ev := withSeq(opstest.MessagesEvent("b1", fmt.Sprintf("r%d", i), 1), uint64(i+2))
		if err := b.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if b.Commits.Len() != history.MaxRememberedCommits {
		t.Fatalf("commits = %d, want %d", b.Commits.Len(), history.MaxRememberedCommits)
	}
	for i := 0; i < 10; i++ {
		if _, ok := b.Commits.Seq(fmt.Sprintf("r%d", i)); ok {
			t.Fatalf("oldest commit r%d was not evicted", i)
		}
	}
	if _, ok := b.Commits.Seq(fmt.Sprintf("r%d", n-1)); !ok {
		t.Fatalf("newest commit missing")
	}
}

func TestBranch_Apply_does_not_alias_the_event(t *testing.T) {
	ev := withSeq(opstest.CreatedEvent("b1", "c"), 1)
	b, err := history.Replay([]history.Event{ev})
	if err != nil {
		t.Fatal(err)
	}
	ev.Messages[0].Content["system_message"] = "changed"
	ev.Settings.Tools[0] = "changed"
	if b.Messages[0].Content["system_message"] != "be brief" || b.Settings.Tools[0] != "add" {
		t.Fatalf("branch aliases its event: %+v", b)
	}
}

func TestMessageConstructors(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ins := history.NewInstructionMessage(history.InstructionSpec{
		Instruction: "add", Guidance: "", Context: []any{"c1"},
		ResponseFormat: map[string]any{"type": "object"},
	}, now)
	if ins.Kind != history.KindInstruction || ins.Role != history.RoleUser || ins.Sender != "user" {
		t.Fatalf("instruction = %+v", ins)
	}
	if _, ok := ins.Content["guidance"]; ok {
		t.Fatalf("empty guidance kept: %v", ins.Content)
	}
	if ins.Content["instruction"] != "add" || ins.Content["response_format"] == nil || len(ins.Content["context"].([]any)) != 1 {
		t.Fatalf("instruction content = %v", ins.Content)
	}
	req := history.NewActionRequest("add", map[string]any{"a": 1}, now)
	res := history.NewActionResponse(&req, 3, "", now)
	if res.Content["action_request_id"] != req.ID || req.Content["action_response_id"] != res.ID {
		t.Fatalf("action messages not linked: %v / %v", req.Content, res.Content)
	}
	if res.Content["function"] != "add" || res.Content["output"] != 3 || res.Role != history.RoleAction {
		t.Fatalf("action response = %+v", res)
	}
	ar := history.NewAssistantResponse("hi", map[string]any{"raw": true}, now)
	if ar.Text() != "hi" || ar.Metadata["model_response"] == nil {
		t.Fatalf("assistant response = %+v", ar)
	}
	if ins.ID == req.ID || !ops.ValidID(ins.ID) {
		t.Fatalf("ids not unique or not valid tokens: %q %q", ins.ID, req.ID)
	}
}
