package prompt

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// memoHistory turns fuzz bytes into a history: each byte picks a message
// kind (and, rarely, a clear or a new system text) so that the memo sees
// instructions, responses (joined when consecutive), action responses
// (pending, de-duplicated) and histories that shrink or change under it.
func memoSteps(data []byte) (steps [][]history.Message, systems []string) {
	var h []history.Message
	system := "sys"
	for i, b := range data {
		id := fmt.Sprintf("m%d", i)
		switch b % 8 {
		case 0, 1:
			h = append(h, history.Message{ID: id, Kind: history.KindInstruction, Content: map[string]any{history.KeyInstruction: fmt.Sprintf("do %d", b)}})
		case 2, 3:
			h = append(h, history.Message{ID: id, Kind: history.KindAssistantResponse, Content: map[string]any{history.KeyAssistantResponse: fmt.Sprintf("done %d", b)}})
		case 4:
			h = append(h, history.Message{ID: id, Kind: history.KindActionResponse, Content: map[string]any{
				history.KeyFunction: "f", history.KeyArguments: map[string]any{"x": float64(b % 3)}, history.KeyOutput: b % 2}})
		case 5:
			h = append(h, history.Message{ID: id, Kind: history.KindActionRequest, Content: map[string]any{history.KeyFunction: "f"}})
		case 6:
			if b%3 == 0 {
				h = nil // a clear
			} else if b%3 == 1 {
				system = fmt.Sprintf("sys %d", b)
			}
		case 7:
			// A prompt is built now.
			steps = append(steps, append([]history.Message(nil), h...))
			systems = append(systems, system)
			continue
		}
	}
	steps = append(steps, h)
	systems = append(systems, system)
	return steps, systems
}

// FuzzPromptMemo: building prompts through the memo, step after step on
// one branch, gives exactly what Build gives from scratch.
func FuzzPromptMemo(f *testing.F) {
	f.Add([]byte{0, 2, 7, 0, 2, 7, 4, 4, 7, 0, 7})
	f.Add([]byte{0, 2, 3, 7, 6, 0, 2, 7, 14, 0, 7})
	f.Add([]byte{4, 12, 4, 7, 0, 7, 1, 7, 2, 10, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 512 {
			return
		}
		memo := NewMemo(2)
		steps, systems := memoSteps(data)
		current := history.Message{ID: "cur", Kind: history.KindInstruction, Content: map[string]any{history.KeyInstruction: "now"}}
		for i, h := range steps {
			want := Build(systems[i], h, current).Slice()
			got := memo.Build("b", systems[i], h, current).Slice()
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d (%d messages): memo prompt\n%v\nwant\n%v", i, len(h), got, want)
			}
			// A provider that changes its copy of the prompt changes
			// nothing later (Slice copies what the memo shares).
			for j := range got {
				got[j].Content = "tampered"
			}
		}
	})
}

// TestPromptMemo_renders_only_new_messages: after a prompt on a branch,
// the next one folds only the messages recorded since (the memo is what
// keeps a request's cost from growing with the branch).
func TestPromptMemo_renders_only_new_messages(t *testing.T) {
	memo := NewMemo(4)
	var h []history.Message
	for i := range 100 {
		h = append(h,
			history.Message{ID: fmt.Sprintf("i%d", i), Kind: history.KindInstruction, Content: map[string]any{history.KeyInstruction: "q"}},
			history.Message{ID: fmt.Sprintf("r%d", i), Kind: history.KindAssistantResponse, Content: map[string]any{history.KeyAssistantResponse: "a"}})
	}
	cur := history.Message{ID: "c", Kind: history.KindInstruction, Content: map[string]any{history.KeyInstruction: "now"}}
	memo.Build("b", "", h, cur)
	// Poison the folded messages: if they were rendered again, the
	// prompt would show it.
	for i := range h {
		h[i].Content = map[string]any{history.KeyInstruction: "poison", history.KeyAssistantResponse: "poison"}
	}
	h = append(h, history.Message{ID: "new", Kind: history.KindInstruction, Content: map[string]any{history.KeyInstruction: "fresh"}})
	got := memo.Build("b", "", h, cur).Slice()
	if len(got) != 202 || got[0].Content != "Instruction:\nq" || got[200].Content != "Instruction:\nfresh" {
		t.Fatalf("prompt of %d turns: first %q, new %q", len(got), got[0].Content, got[200].Content)
	}
	// Another system text, or a history that no longer starts the same,
	// is rendered from scratch.
	if got := memo.Build("b", "other", h, cur); got.At(1).Content == "Instruction:\nq" {
		t.Fatal("memo used for another system text")
	}
}

// TestPromptMemo_concurrent_builds: prompts built at once from one memo
// entry, each with other messages after it (as requests of one branch
// running in parallel do), share the turns folded before and nothing
// else: each equals Build's, also after the others extended the
// shared turns (run with -race).
func TestPromptMemo_concurrent_builds(t *testing.T) {
	memo := NewMemo(4)
	var base []history.Message
	for i := range 50 {
		base = append(base,
			history.Message{ID: fmt.Sprintf("i%d", i), Kind: history.KindInstruction, Content: map[string]any{history.KeyInstruction: fmt.Sprintf("q%d", i)}},
			history.Message{ID: fmt.Sprintf("r%d", i), Kind: history.KindAssistantResponse, Content: map[string]any{history.KeyAssistantResponse: fmt.Sprintf("a%d", i)}})
	}
	cur := history.Message{ID: "c", Kind: history.KindInstruction, Content: map[string]any{history.KeyInstruction: "now"}}
	for round := range 20 {
		memo.Build("b", "sys", base, cur) // the entry every build below starts from
		var wg sync.WaitGroup
		errs := make(chan string, 8)
		for g := range 8 {
			wg.Go(func() {
				h := slices.Clone(base)
				for k := range g + 1 {
					id := fmt.Sprintf("g%d-%d-%d", round, g, k)
					// An assistant response first: it joins the last turn
					// of base, which the memo keeps open.
					h = append(h,
						history.Message{ID: id + "r", Kind: history.KindAssistantResponse, Content: map[string]any{history.KeyAssistantResponse: id}},
						history.Message{ID: id + "i", Kind: history.KindInstruction, Content: map[string]any{history.KeyInstruction: id}})
				}
				want := Build("sys", h, cur).Slice()
				for range 3 {
					if got := memo.Build("b", "sys", h, cur).Slice(); !reflect.DeepEqual(got, want) {
						errs <- fmt.Sprintf("goroutine %d: prompt\n%v\nwant\n%v", g, got, want)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatalf("round %d: %s", round, e)
		}
	}
}
