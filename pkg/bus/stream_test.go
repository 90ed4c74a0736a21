package bus_test

// communicate and operate with "stream": true end to end: the OpenAI and
// Anthropic providers stream from local servers speaking their wire
// formats, the chunks reach the client on lion.chunk.<id>, and the answer
// is the one the same call gives without streaming.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/anthropic"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai"
)

// streamingServer answers every call with the deltas of text: as SSE when
// the body asks for a stream, else as one JSON answer, in the format of
// the provider (openai or anthropic).
func streamingServer(t *testing.T, format string, deltas []string) *httptest.Server {
	t.Helper()
	text := strings.Join(deltas, "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		stream := body["stream"] == true
		if !stream {
			w.Header().Set("content-type", "application/json")
			if format == "openai" {
				fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%q}}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`, text)
			} else {
				fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":3}}`, text)
			}
			return
		}
		w.Header().Set("content-type", "text/event-stream")
		out := func(event, data string) {
			if event != "" {
				fmt.Fprintf(w, "event: %s\n", event)
			}
			fmt.Fprintf(w, "data: %s\n\n", data)
			w.(http.Flusher).Flush()
		}
		if format == "openai" {
			for _, d := range deltas {
				out("", fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, d))
			}
			out("", `{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
			out("", `{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`)
			out("", "[DONE]")
			return
		}
		out("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","usage":{"input_tokens":5,"output_tokens":1}}}`)
		out("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for _, d := range deltas {
			out("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, d))
		}
		out("content_block_stop", `{"type":"content_block_stop","index":0}`)
		out("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`)
		out("message_stop", `{"type":"message_stop"}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestStream_API_models_deliver_deltas_as_chunks(t *testing.T) {
	t.Parallel()
	deltas := []string{"Lyon ", "is in ", "France."}
	oa := streamingServer(t, "openai", deltas)
	an := streamingServer(t, "anthropic", deltas)
	op, err := openai.New(openai.Config{BaseURL: oa.URL + "/v1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	ap, err := anthropic.New(anthropic.Config{BaseURL: an.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, map[string]ops.Provider{openai.Name: op, anthropic.Name: ap}, worker.Config{})
	tests := []struct {
		verb, model string
	}{
		{"communicate", "openai:m"},
		{"communicate", "anthropic:m"},
		{"operate", "openai:m"},
	}
	for i, tt := range tests {
		t.Run(tt.verb+" "+tt.model, func(t *testing.T) {
			branch := fmt.Sprintf("s%d", i)
			bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{"branch_id": branch, "chat_model": tt.model}), nil)
			data := map[string]any{"instruction": "Where is Lyon?", "skip_validation": true}
			plain := b.Do(t, tt.verb, branch, data)
			var want any
			bustest.MustResult(t, plain, &want)

			data["stream"] = true
			var text strings.Builder
			var n int
			_, reply, err := b.Client.Stream(bustest.Ctx(t), tt.verb, branch, data, func(c ops.Chunk) error {
				n++
				if c.Seq != uint64(n) {
					t.Errorf("chunk %d has seq %d", n, c.Seq)
				}
				if c.Kind == ops.ChunkText {
					text.WriteString(c.Content)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			bustest.CheckSchema(t, reply)
			var got any
			bustest.MustResult(t, reply, &got)
			if fmt.Sprint(got) != fmt.Sprint(want) || text.String() != "Lyon is in France." || n != len(deltas)+1 {
				t.Errorf("streamed value %v and text %q in %d chunks; without streaming %v", got, text.String(), n, want)
			}
		})
	}
}
