package ops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
)

// A chat without a branch runs on an empty branch that is never stored:
// the model sees only the instruction, nothing is recorded, the result
// names no branch; without a chat_model it is refused; the other verbs
// still need their branch.
func TestEngine_chat_without_a_branch(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":{"provider":"scripted","replies":["on main"]}}`)
	tests := []struct {
		name, verb, data string
		want             string // the value, or the error message
		wantCode         ops.Code
	}{
		{"chat names its model", "chat", `{"instruction":"q","chat_model":{"provider":"scripted","replies":["stateless"]}}`, `"stateless"`, ""},
		{"chat without a model", "chat", `{"instruction":"q"}`, "must name its chat_model", ops.CodeInvalidRequest},
		{"chat_and_record needs its branch", "chat_and_record", `{"instruction":"q","chat_model":"scripted:echo"}`, "branch id is required", ops.CodeInvalidRequest},
		{"communicate needs its branch", "communicate", `{"instruction":"q","chat_model":"scripted:echo"}`, "branch id is required", ops.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := b.do(t, tt.verb, "", tt.data)
			if tt.wantCode != "" {
				var oe *ops.Error
				if !errors.As(err, &oe) || oe.Code != tt.wantCode || !strings.Contains(oe.Message, tt.want) {
					t.Fatalf("%s = %v, %v; want %s %q", tt.verb, res, err, tt.wantCode, tt.want)
				}
				return
			}
			if err != nil || string(res.Value) != tt.want || res.BranchID != "" {
				t.Fatalf("%s = %+v, %v; want %s on no branch", tt.verb, res, err, tt.want)
			}
		})
	}
	if n := len(b.branch(t, "main").Messages); n != 0 {
		t.Fatalf("main holds %d messages; a stateless chat touches no branch", n)
	}
}
