package ops_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// parse turns a model's text into a value of a JSON Schema: the JSON is
// recovered from the fenced block, "Answer" is matched to "answer" and "42"
// coerced to 42, all without calling a model. A text without JSON fails as
// extraction_failed when no reformat round is allowed.
func ExampleEngine_Do_parse() {
	providers := ops.NewProviders(map[string]ops.Provider{scripted.Name: scripted.New()})
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Providers: providers})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := eng.Do(ctx, ops.Request{ID: "create-1", Verb: "branch.create",
		Data: json.RawMessage(`{"branch_id":"demo","chat_model":"scripted:echo"}`)}); err != nil {
		panic(err)
	}
	schema := `{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"]}`
	for _, text := range []string{"Sure:\n```json\n{\"Answer\": \"42\"}\n```", "It is forty-two."} {
		t, _ := json.Marshal(text)
		res, err := eng.Do(ctx, ops.Request{ID: "parse-1", Verb: "parse", BranchID: "demo",
			Data: json.RawMessage(`{"text":` + string(t) + `,"response_format":` + schema + `,"max_retries":0}`)})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(string(res.Value))
	}
	// Output:
	// {"answer":42}
	// extraction_failed: no JSON object or array found in the text; text: "It is forty-two."
}
