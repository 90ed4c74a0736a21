package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// A branch grown past Config.MaxPromptBytes cannot be sent as one
// conversation: the request is refused before any model call, with what
// to do instead; clear_messages still works on it.
func TestEngine_prompt_bound(t *testing.T) {
	t.Parallel()
	count := &countingProvider{}
	provs := ops.NewProviders(map[string]ops.Provider{"count": count})
	if err := scripted.Register(provs); err != nil {
		t.Fatal(err)
	}
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Providers: provs, MaxPromptBytes: 2000})
	if err != nil {
		t.Fatal(err)
	}
	do := func(id, data string) error {
		_, err := eng.Do(context.Background(), ops.Request{ID: id, Verb: "communicate", BranchID: "long", Data: json.RawMessage(data)})
		return err
	}
	if _, err := eng.Do(context.Background(), ops.Request{ID: "c", Verb: "branch.create", BranchID: "long",
		Data: json.RawMessage(`{"chat_model":"count:echo"}`)}); err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("word ", 100) // 500 bytes
	var refused error
	sent := 0
	for i := range 10 {
		if refused = do(fmt.Sprintf("r%d", i), fmt.Sprintf(`{"instruction":%q}`, line)); refused != nil {
			break
		}
		sent++
	}
	var oe *ops.Error
	if !errors.As(refused, &oe) || oe.Code != ops.CodeInvalidRequest || !strings.Contains(oe.Message, "too long for one model call") ||
		!strings.Contains(oe.Message, "bound of 2000") {
		t.Fatalf("after %d requests: %v, want invalid_request naming the bound", sent, refused)
	}
	if sent == 0 || count.count() != sent {
		t.Fatalf("%d requests answered, %d model calls: the refused one must not call the model", sent, count.count())
	}
	if err := do("fresh", fmt.Sprintf(`{"instruction":%q,"clear_messages":true}`, line)); err != nil {
		t.Fatalf("clear_messages on the long branch: %v", err)
	}
}
