package ops_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// A branch is created with a scripted echo model, then communicate records
// one exchange on it.
func ExampleEngine_Do() {
	providers := ops.NewProviders(nil)
	if err := scripted.Register(providers); err != nil {
		panic(err)
	}
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Providers: providers})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	_, err = eng.Do(ctx, ops.Request{
		ID: "req-1", Verb: "branch.create",
		Data: json.RawMessage(`{"branch_id":"demo","system":"Be brief.","chat_model":"scripted:echo"}`),
	})
	if err != nil {
		panic(err)
	}
	res, err := eng.Do(ctx, ops.Request{
		ID: "req-2", Verb: "communicate", BranchID: "demo",
		Data: json.RawMessage(`{"instruction":"Hello, lionbus!"}`),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Value))

	got, err := eng.Do(ctx, ops.Request{ID: "req-3", Verb: "branch.get", BranchID: "demo"})
	if err != nil {
		panic(err)
	}
	var b history.Branch
	if err := json.Unmarshal(got.Value, &b); err != nil {
		panic(err)
	}
	for _, m := range b.Messages {
		fmt.Println(m.Kind, m.Content)
	}
	// Output:
	// "Hello, lionbus!"
	// system map[system_message:Be brief.]
	// instruction map[instruction:Hello, lionbus!]
	// assistant_response map[assistant_response:Hello, lionbus!]
}

// With response_format, communicate returns the JSON value of the answer
// that satisfies the schema. Here the scripted model first answers in prose,
// and a reformat round (the second scripted reply) fixes it; the request
// sets retry_initial_delay to 0 to run that round without the default
// one-second wait.
func ExampleNewEngine() {
	providers := ops.NewProviders(map[string]ops.Provider{scripted.Name: scripted.New()})
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Providers: providers})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	model := `{"provider":"scripted","replies":["It is four.","{\"answer\": 4}"]}`
	if _, err := eng.Do(ctx, ops.Request{
		ID: "create-1", Verb: "branch.create",
		Data: json.RawMessage(`{"branch_id":"math","chat_model":` + model + `}`),
	}); err != nil {
		panic(err)
	}
	res, err := eng.Do(ctx, ops.Request{
		ID: "ask-1", Verb: "communicate", BranchID: "math",
		Data: json.RawMessage(`{"instruction":"What is 2+2?","retry_initial_delay":0,"response_format":{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"]}}`),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Value))

	// The same request delivered again is answered from history.
	again, err := eng.Do(ctx, ops.Request{
		ID: "ask-1", Verb: "communicate", BranchID: "math",
		Data: json.RawMessage(`{"instruction":"What is 2+2?"}`),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(again.Value), again.Replayed)
	// Output:
	// {"answer":4}
	// {"answer":4} true
}
