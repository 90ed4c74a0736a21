package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai"
)

// A provider for an OpenAI-compatible server (here a local stand-in that
// answers every request the same way) is registered under "openai", then
// asked for one completion.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4.1-mini",
			"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Hello!"}}],
			"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`)
	}))
	defer srv.Close()

	// In production: openai.New(openai.ConfigFromEnv()).
	prov, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-example"})
	if err != nil {
		panic(err)
	}
	providers := ops.NewProviders(nil)
	if err := providers.Register(openai.Name, prov); err != nil {
		panic(err)
	}

	model, err := history.ParseModelRef("openai:gpt-4.1-mini")
	if err != nil {
		panic(err)
	}
	p, err := providers.Lookup(model.Provider)
	if err != nil {
		panic(err)
	}
	comp, err := p.Complete(context.Background(), ops.Call{
		Model:    model,
		Messages: ops.PromptOf([]ops.ChatMessage{{Role: history.RoleSystem, Content: "Be brief."}, {Role: history.RoleUser, Content: "Say hello."}}...),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(comp.Text)
	fmt.Printf("%d tokens in, %d out\n", comp.Usage.InputTokens, comp.Usage.OutputTokens)
	// Output:
	// Hello!
	// 9 tokens in, 2 out
}
