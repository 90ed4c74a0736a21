package prompt

import (
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestRenderInstruction(t *testing.T) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"answer":     map[string]any{"type": "string", "description": "the answer"},
			"confidence": map[string]any{"type": "number"},
			"tags":       map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
		"required": []any{"answer"},
	}
	tests := []struct {
		name    string
		content map[string]any
		extra   []any
		full    bool
		want    string
	}{
		{
			name:    "instruction only",
			content: map[string]any{"instruction": "What is 2+2?"},
			full:    true,
			want:    "Instruction:\nWhat is 2+2?",
		},
		{
			name: "guidance context and folded action output",
			content: map[string]any{
				"instruction": "Sum it.", "guidance": "Be brief.",
				"context": []any{map[string]any{"k": "v"}, "plain ctx"},
			},
			extra: []any{map[string]any{"function": "add", "arguments": map[string]any{"a": 1}, "output": 3}},
			full:  true,
			want: "Guidance:\nBe brief.\n\nInstruction:\nSum it.\n\nContext:\n" +
				"- {\n    \"k\": \"v\"\n  }\n- plain ctx\n" +
				"- {\n    \"arguments\": {\n      \"a\": 1\n    },\n    \"function\": \"add\",\n    \"output\": 3\n  }",
		},
		{
			name:    "structured instruction is JSON",
			content: map[string]any{"instruction": map[string]any{"task": "x"}},
			want:    "Instruction:\n{\n  \"task\": \"x\"\n}",
		},
		{
			name:    "plain content wins",
			content: map[string]any{"instruction": "ignored", "plain_content": "verbatim"},
			full:    true,
			want:    "verbatim",
		},
		{
			name:    "historical instruction drops tools and schema",
			content: map[string]any{"instruction": "Q", "response_format": schema, "tool_schemas": []any{map[string]any{"name": "add"}}},
			full:    false,
			want:    "Instruction:\nQ",
		},
		{
			name:    "current instruction carries tools, schema and a JSON example",
			content: map[string]any{"instruction": "Q", "response_format": schema, "tool_schemas": []any{"add(a, b)"}},
			full:    true,
			want: "Instruction:\nQ\n\nTools:\n- add(a, b)\n\nResponseSchema:\n" + jsonval.Indent(schema) +
				"\n\nResponseFormat:\nAnswer with one JSON value that satisfies ResponseSchema, inside a ```json code block, like this example:\n" +
				"```json\n{\n  \"answer\": \"<the answer>\",\n  \"confidence\": 0,\n  \"tags\": [\n    \"<string>\"\n  ]\n}\n```",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := renderInstruction(tt.content, tt.extra, tt.full)
			if got != tt.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, tt.want)
			}
			if strings.Contains(got, "<class") {
				t.Fatalf("python repr leaked into the prompt")
			}
		})
	}
}

func TestBuildPrompt(t *testing.T) {
	ins := func(text string) history.Message {
		return history.NewInstructionMessage(history.InstructionSpec{Instruction: text}, t0)
	}
	res := func(text string) history.Message { return history.NewAssistantResponse(text, nil, t0) }
	areq := history.NewActionRequest("add", map[string]any{"a": 1}, t0)
	aresp := history.NewActionResponse(&areq, 3, "", t0)
	folded := "- {\n    \"arguments\": {\n      \"a\": 1\n    },\n    \"function\": \"add\",\n    \"output\": 3\n  }"
	tests := []struct {
		name    string
		system  string
		history []history.Message
		current history.Message
		want    []Message
	}{
		{
			name:    "system is a real system message",
			system:  "SYS",
			current: ins("q1"),
			want:    []Message{{history.RoleSystem, "SYS"}, {history.RoleUser, "Instruction:\nq1"}},
		},
		{
			name:    "consecutive instructions are all kept",
			history: []history.Message{ins("q1"), ins("q2"), res("a2"), ins("q3")},
			current: ins("q4"),
			want: []Message{
				{history.RoleUser, "Instruction:\nq1"}, {history.RoleUser, "Instruction:\nq2"}, {history.RoleAssistant, "a2"},
				{history.RoleUser, "Instruction:\nq3"}, {history.RoleUser, "Instruction:\nq4"},
			},
		},
		{
			name:    "consecutive responses are joined",
			history: []history.Message{history.NewSystemMessage("ignored in walk", t0), ins("q1"), res("a"), res("b")},
			current: ins("q2"),
			want:    []Message{{history.RoleUser, "Instruction:\nq1"}, {history.RoleAssistant, "a\n\nb"}, {history.RoleUser, "Instruction:\nq2"}},
		},
		{
			name:    "action output folds into the next instruction",
			history: []history.Message{ins("q1"), res("a1"), areq, aresp, ins("q2")},
			current: ins("q3"),
			want: []Message{
				{history.RoleUser, "Instruction:\nq1"}, {history.RoleAssistant, "a1"},
				{history.RoleUser, "Instruction:\nq2\n\nContext:\n" + folded}, {history.RoleUser, "Instruction:\nq3"},
			},
		},
		{
			name:    "trailing action output folds into the current instruction, deduplicated",
			system:  "SYS",
			history: []history.Message{areq, aresp, aresp},
			current: ins("q"),
			want:    []Message{{history.RoleSystem, "SYS"}, {history.RoleUser, "Instruction:\nq\n\nContext:\n" + folded}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Build(tt.system, tt.history, tt.current).Slice()
			if len(got) != len(tt.want) {
				t.Fatalf("got %d messages %q, want %d %q", len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("message %d:\ngot  %q\nwant %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestSchemaExample(t *testing.T) {
	tests := []struct {
		name   string
		schema map[string]any
		want   string
	}{
		{"enum", map[string]any{"enum": []any{"a", "b"}}, `"a"`},
		{"const", map[string]any{"const": 7}, `7`},
		{"nullable type list", map[string]any{"type": []any{"null", "integer"}}, `0`},
		{"anyOf skips null", map[string]any{"anyOf": []any{map[string]any{"type": "null"}, map[string]any{"type": "boolean"}}}, `true`},
		{"untyped properties", map[string]any{"properties": map[string]any{"x": map[string]any{"type": "string"}}}, `{"x":"<string>"}`},
		{"array without items", map[string]any{"type": "array"}, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := jsonval.Compact(schemaExample(tt.schema, 0)); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
	deep := map[string]any{"type": "string"}
	for i := 0; i < 50; i++ {
		deep = map[string]any{"type": "array", "items": deep}
	}
	if got := jsonval.Compact(schemaExample(deep, 0)); strings.Count(got, "[") > maxExampleDepth+1 {
		t.Fatalf("example nesting not bounded: %s", got)
	}
}
