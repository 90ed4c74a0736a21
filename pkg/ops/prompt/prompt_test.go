package prompt

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// TestPrompt_accessors: a prompt made of shared turns and its own reads
// as one list, every way it can be read.
func TestPrompt_accessors(t *testing.T) {
	sys := Message{Role: history.RoleSystem, Content: "s"}
	q := Message{Role: history.RoleUser, Content: "q"}
	a := Message{Role: history.RoleAssistant, Content: "a"}
	tests := []struct {
		name string
		p    Prompt
		want []Message
	}{
		{"zero", Prompt{}, []Message{}},
		{"own turns only", Of(sys, q), []Message{sys, q}},
		{"shared only", Prompt{head: []Message{sys, q}}, []Message{sys, q}},
		{"shared then own", Prompt{head: []Message{sys, q}, tail: []Message{a, q}}, []Message{sys, q, a, q}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Slice(); !slices.Equal(got, tt.want) {
				t.Fatalf("Slice = %v, want %v", got, tt.want)
			}
			if tt.p.Len() != len(tt.want) {
				t.Fatalf("Len = %d, want %d", tt.p.Len(), len(tt.want))
			}
			var all []Message
			for i, m := range tt.p.All() {
				if i != len(all) || tt.p.At(i) != m {
					t.Fatalf("All yields %d: %v; At gives %v", i, m, tt.p.At(i))
				}
				all = append(all, m)
			}
			if len(all) != len(tt.want) {
				t.Fatalf("All yields %d messages, want %d", len(all), len(tt.want))
			}
			last, ok := tt.p.Last()
			if ok != (len(tt.want) > 0) || ok && last != tt.want[len(tt.want)-1] {
				t.Fatalf("Last = %v, %v", last, ok)
			}
			if got, want := tt.p.String(), fmt.Sprint(tt.want); got != want {
				t.Fatalf("String = %q, want %q", got, want)
			}
			js, err := json.Marshal(tt.p)
			wantJS, _ := json.Marshal(tt.want)
			if err != nil || string(js) != string(wantJS) {
				t.Fatalf("JSON = %s (%v), want %s", js, err, wantJS)
			}
			n := 0
			for _, m := range tt.want {
				n += len(m.Content)
			}
			if tt.p.Bytes() != n {
				t.Fatalf("Bytes = %d, want %d", tt.p.Bytes(), n)
			}
		})
	}
}

// TestPrompt_copies: PromptOf copies what it is given, and Slice returns a
// copy: changing either changes nothing in the prompt.
func TestPrompt_copies(t *testing.T) {
	in := []Message{{Role: history.RoleUser, Content: "q"}}
	p := Of(in...)
	in[0].Content = "changed"
	s := p.Slice()
	s[0].Content = "changed too"
	if p.At(0).Content != "q" {
		t.Fatalf("prompt changed to %q", p.At(0).Content)
	}
	shared := []Message{{Role: history.RoleSystem, Content: "s"}}
	p = Prompt{head: shared}
	s = p.Slice()
	s[0].Content = "x"
	if shared[0].Content != "s" {
		t.Fatal("Slice shares the shared turns")
	}
}
