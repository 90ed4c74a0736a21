package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
)

const integerAnswer = `{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"],"additionalProperties":false}`

// parseReq is the data of a parse request for text against schema, plus
// extra fields (",..." or "").
func parseReq(text, schema, extra string) string {
	t, _ := json.Marshal(text)
	return `{"text":` + string(t) + `,"response_format":` + schema + extra + `}`
}

func TestParse(t *testing.T) {
	replies := func(rs ...string) string {
		return `{"provider":"scripted","replies":[` + strings.Join(rs, ",") + `]}`
	}
	tests := []struct {
		name      string
		model     string // the branch's chat model; "" for none
		data      string
		want      string // the value, or "error:<code>"
		wantCalls int
		wantWaits []time.Duration
	}{
		{
			name: "a fenced reply with \"42\" for an integer field is recovered and coerced to 42", model: `"scripted:echo"`,
			data: parseReq("Sure!\n```json\n{\"answer\": \"42\"}\n```", integerAnswer, ""), want: `{"answer":42}`,
		},
		{
			name: "keys matched and extras dropped without a model", model: "",
			data: parseReq("{'Answer': '7', note: 'extra',}", integerAnswer, ""), want: `{"answer":7}`,
		},
		{
			// reference A5: the reformat round runs after the local attempt failed.
			name: "a reformat round fixes it", model: replies(`"{\"answer\": 4}"`),
			data: parseReq("It is four.", integerAnswer, ""), want: `{"answer":4}`,
			wantCalls: 1, wantWaits: []time.Duration{time.Second},
		},
		{
			// 0022-D1 parse defaults: three retries, waits 1 s, 1.85 s, 3.42 s.
			name: "every round fails: schema_rejected from the last reply", model: replies(`"no"`, `"still no"`, `"{\"answer\": \"x\"}"`),
			data: parseReq("It is four.", integerAnswer, ""), want: "error:schema_rejected",
			wantCalls: 3, wantWaits: []time.Duration{time.Second, 1850 * time.Millisecond, 3422500 * time.Microsecond},
		},
		{
			name: "every round fails: extraction_failed from the last reply", model: replies(`"{\"answer\": \"x\"}"`, `"no json"`),
			data: parseReq("It is four.", integerAnswer, `,"max_retries":2,"retry_initial_delay":0`), want: "error:extraction_failed",
			wantCalls: 2,
		},
		{
			// 0021-D1-07: by default (raise) a failure is an error, not a value.
			name: "no JSON and no retries", model: `"scripted:echo"`,
			data: parseReq("It is four.", integerAnswer, `,"max_retries":0`), want: "error:extraction_failed",
		},
		{
			name: "JSON that does not fit and no retries", model: `"scripted:echo"`,
			data: parseReq(`{"answer": "four"}`, integerAnswer, `,"max_retries":0`), want: "error:schema_rejected",
		},
		{
			// 0022-D3-06: return_value passes the unparsed value through.
			name: "return_value answers the text", model: `"scripted:echo"`,
			data: parseReq("It is four.", integerAnswer, `,"max_retries":0,"handle_validation":"return_value"`), want: `"It is four."`,
		},
		{
			// 0022-D3-06: return_none answers null.
			name: "return_none answers null", model: `"scripted:echo"`,
			data: parseReq("It is four.", integerAnswer, `,"max_retries":0,"handle_validation":"return_none"`), want: `null`,
		},
		{
			name: "fuzzy_match false matches exact keys only", model: `"scripted:echo"`,
			data: parseReq(`{"Answer": 1}`, integerAnswer, `,"max_retries":0,"fuzzy_match":false`), want: "error:schema_rejected",
		},
		{
			name: "a lower similarity threshold", model: `"scripted:echo"`,
			data: parseReq(`{"anser_value": 1}`, integerAnswer, `,"max_retries":0,"similarity_threshold":0.7`), want: `{"answer":1}`,
		},
		{
			// 0021-D3-07 (as num_parse_retries): above five is clamped to five.
			name: "max_retries clamped to five", model: replies(`"a"`, `"b"`, `"c"`, `"d"`, `"e"`, `"f"`, `"g"`),
			data: parseReq("x", integerAnswer, `,"max_retries":50,"retry_initial_delay":0`), want: "error:extraction_failed",
			wantCalls: 5,
		},
		{
			// 0021-D1-02: the request's parse_model overrides the branch's.
			name: "parse_model override", model: replies(`"from the branch"`),
			data: parseReq("x", integerAnswer, `,"retry_initial_delay":0,"parse_model":`+replies(`"{\"answer\": 9}"`)), want: `{"answer":9}`,
			wantCalls: 1,
		},
		{
			name: "a reformat round needs a model", model: "",
			data: parseReq("x", integerAnswer, ""), want: "error:invalid_request",
		},
		{
			name: "provider failure", model: replies(`{"error":"boom"}`),
			data: parseReq("x", integerAnswer, `,"retry_initial_delay":0`), want: "error:provider_error", wantCalls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			create := `{"branch_id":"main","system":"SYS"}`
			if tt.model != "" {
				create = `{"branch_id":"main","system":"SYS","chat_model":` + tt.model + `}`
			}
			b.mustDo(t, "branch.create", "", create)
			before := b.branch(t, "main")
			res, err := b.doID(t, "p1", "parse", "main", tt.data)
			if c, ok := strings.CutPrefix(tt.want, "error:"); ok {
				if string(code(err)) != c {
					t.Fatalf("err = %v, want %s", err, c)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if string(res.Value) != tt.want || res.BranchID != "main" || res.Replayed {
					t.Fatalf("result = %+v (value %s), want value %s", res, res.Value, tt.want)
				}
			}
			if got := b.prov.count(); got != tt.wantCalls {
				t.Errorf("model calls = %d, want %d", got, tt.wantCalls)
			}
			if got := b.waits.all(); fmt.Sprint(got) != fmt.Sprint(tt.wantWaits) {
				t.Errorf("waits = %v, want %v", got, tt.wantWaits)
			}
			// parse records nothing and emits no signals (reference A9).
			after := b.branch(t, "main")
			if after.Seq != before.Seq || len(after.Messages) != len(before.Messages) || after.ModelCalls != 0 {
				t.Errorf("parse changed the branch: seq %d → %d, %d messages, %d model calls", before.Seq, after.Seq, len(after.Messages), after.ModelCalls)
			}
			if s := b.signals.types("p1"); len(s) != 0 {
				t.Errorf("parse emitted signals %v", s)
			}
		})
	}
}

// The reformat prompt holds the branch history, the reformat instruction
// with the previous error and the text to format, and the schema
// (reference A5); usage is summed.
func TestParse_reformat_prompt(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","system":"SYS","chat_model":{"provider":"scripted","replies":[
		"first", {"text":"{\"answer\": 5}","usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}]}}`)
	b.mustDo(t, "communicate", "main", `{"instruction":"earlier question"}`)
	res := b.mustDo(t, "parse", "main", parseReq("It is five.", integerAnswer, ""))
	if string(res.Value) != `{"answer":5}` || res.Usage == nil || res.Usage.TotalTokens != 5 {
		t.Fatalf("result = %s, usage %+v", res.Value, res.Usage)
	}
	call := b.prov.last()
	if call.Index != 1 || call.RequestID != "req-3" {
		t.Fatalf("reformat call index %d request %q, want 1 and req-3", call.Index, call.RequestID)
	}
	if len(call.Messages.Slice()) != 4 || call.Messages.Slice()[1].Content != "Instruction:\nearlier question" || call.Messages.Slice()[2].Content != "first" {
		t.Fatalf("reformat prompt should hold the branch history: %q", call.Messages)
	}
	last := call.Messages.Slice()[3].Content
	for _, want := range []string{"reformat text into specified model or structure", "did not validate: no JSON object or array", `"text_to_format": "It is five."`, `"answer"`} {
		if !strings.Contains(last, want) {
			t.Errorf("reformat instruction lacks %q:\n%s", want, last)
		}
	}
}

// 0022-D3-06: a raised failure quotes at most 200 characters of the text.
func TestParse_failure_message(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main"}`)
	text := strings.Repeat("é", 150) // 300 bytes
	_, err := b.do(t, "parse", "main", parseReq(text, integerAnswer, `,"max_retries":0`))
	var oe *ops.Error
	if !errors.As(err, &oe) || oe.Code != ops.CodeExtraction || !errors.Is(err, ops.ErrNoJSON) {
		t.Fatalf("err = %v, want extraction_failed wrapping ErrNoJSON", err)
	}
	if strings.Contains(oe.Message, strings.Repeat("é", 101)) || !strings.Contains(oe.Message, strings.Repeat("é", 100)+"…") {
		t.Fatalf("message should quote the first 200 bytes of the text: %s", oe.Message)
	}
	_, err = b.do(t, "parse", "main", parseReq(`{"answer": "x"}`, integerAnswer, `,"max_retries":0`))
	if !errors.As(err, &oe) || oe.Code != ops.CodeSchemaRejected || !errors.Is(err, ops.ErrSchemaRejected) || !strings.Contains(oe.Message, "/answer") {
		t.Fatalf("err = %v, want schema_rejected naming /answer", err)
	}
}

func TestParse_bad_requests(t *testing.T) {
	b := setup(t)
	b.mustDo(t, "branch.create", "", `{"branch_id":"main","chat_model":"scripted:echo"}`)
	tests := []struct {
		name, branch, data string
		want               ops.Code
	}{
		{"no text", "main", `{"response_format":{"type":"object"}}`, ops.CodeInvalidRequest},
		{"no response_format", "main", `{"text":"x"}`, ops.CodeInvalidRequest},
		{"boolean response_format", "main", `{"text":"x","response_format":true}`, ops.CodeInvalidRequest},
		{"remote reference", "main", `{"text":"x","response_format":{"$ref":"https://example.com/s.json"}}`, ops.CodeInvalidRequest},
		{"bad handle_validation", "main", `{"text":"x","response_format":{},"handle_validation":"ignore"}`, ops.CodeInvalidRequest},
		{"negative max_retries", "main", `{"text":"x","response_format":{},"max_retries":-1}`, ops.CodeInvalidRequest},
		{"threshold too low", "main", `{"text":"x","response_format":{},"similarity_threshold":0.2}`, ops.CodeInvalidRequest},
		{"delay too long", "main", `{"text":"x","response_format":{},"retry_initial_delay":60}`, ops.CodeInvalidRequest},
		{"text of the wrong type", "main", `{"text":5,"response_format":{}}`, ops.CodeInvalidRequest},
		{"no branch id", "", `{"text":"x","response_format":{}}`, ops.CodeInvalidRequest},
		// 0021-D1-01: a verb works on an existing branch only.
		{"unknown branch", "nope", `{"text":"{}","response_format":{}}`, ops.CodeBranchNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.eng.Do(context.Background(), ops.Request{ID: "bad", Verb: "parse", BranchID: tt.branch, Data: json.RawMessage(tt.data)})
			if code(err) != tt.want {
				t.Fatalf("err = %v, want %s", err, tt.want)
			}
		})
	}
	if b.prov.count() != 0 {
		t.Fatal("a refused request called the model")
	}
}
