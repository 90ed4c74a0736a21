package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/wire"
)

// newLNDLEngine is an engine with a memory store, the tools "add" and
// "upper", and branch "b" allowed both.
func newLNDLEngine(t *testing.T) *ops.Engine {
	t.Helper()
	e, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Tools: opstest.NewToolFuncs(map[string]opstest.ToolFunc{
		"add": func(_ context.Context, a map[string]any) (any, error) {
			x, _ := a["x"].(float64)
			y, _ := a["y"].(float64)
			return x + y, nil
		},
		"upper": func(_ context.Context, a map[string]any) (any, error) {
			s, _ := a["s"].(string)
			return strings.ToUpper(s), nil
		},
	})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Do(context.Background(), ops.Request{ID: "mk", Verb: "branch.create",
		Data: json.RawMessage(`{"branch_id":"b","tools":["add","upper"]}`)}); err != nil {
		t.Fatal(err)
	}
	return e
}

// cliReplies is a stand-in for the run_and_collect middle: it answers
// the round's value from replies, by the round's stage id, and keeps the
// inputs.
type cliReplies struct {
	replies map[string]string // stage id suffix -> JSON value
	ins     []ops.MiddleInput
}

func (c *cliReplies) Exchange(_ context.Context, in ops.MiddleInput) (*ops.MiddleResult, error) {
	c.ins = append(c.ins, in)
	for suffix, v := range c.replies {
		if strings.HasSuffix(in.RequestID, suffix) {
			return middleValue(v)
		}
	}
	return nil, errors.New("no reply scripted")
}

const cliTarget = `{"type":"object","properties":{"n":{"type":"number"},"s":{"type":"string"}},"required":["n","s"]}`

// 0024-D2-08, 0024-D3-02, 0024-D5-08 (as lionbus intends them): a
// CLI-backed model's rounds go through the run_and_collect middle, and
// its "no text" (null) answer is a continue round, as an API model's
// empty text is.
func TestLNDLMiddle_0024_D3_02_cli_no_text_continues(t *testing.T) {
	e := newLNDLEngine(t)
	cli := &cliReplies{replies: map[string]string{
		"/round1": `null`,
		"/round2": `"` + "```lndl\\n<lact a>add(x=1, y=2)</lact>\\n<lact u>upper(s=\\\"go\\\")</lact>\\n```" + `"`,
		"/round3": `"` + "```lndl\\nOUT{n: [a], s: [u]}\\n```" + `"`,
	}}
	res, err := ops.LNDLMiddleExchange(context.Background(), e, cli, middleIn(ops.MiddleInput{RequestID: "r/middle", BranchID: "b", Verb: "operate"}, func(c *wire.CommunicateRequest) {
		c.Instruction, c.ChatModel, c.ResponseFormat = "i", &history.ModelRef{Provider: ops.CLIProviderName, Model: "fake"}, json.RawMessage(cliTarget)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if valueJSON(res) != `{"n":3,"s":"GO"}` || res.LNDL == nil || len(res.LNDL.Rounds) != 3 || res.LNDL.Rounds[0].Outcome != ops.RoundContinue {
		t.Fatalf("value %s, report %+v", valueJSON(res), res.LNDL)
	}
	if len(cli.ins) != 3 || !cli.ins[0].SkipValidation || cli.ins[0].ResponseFormat != nil {
		t.Fatalf("the CLI middle was handed %+v", cli.ins)
	}
}

// 0024-D2-08: a CLI-backed model goes to run_and_collect; one the worker
// was not started with (no CLI provider) is an invalid request naming the
// provider, before any model call.
func TestLNDLMiddle_cli_model_needs_a_cli_provider(t *testing.T) {
	e := newLNDLEngine(t)
	_, err := ops.LNDLMiddleExchange(context.Background(), e, nil, middleIn(ops.MiddleInput{RequestID: "r/middle", BranchID: "b"}, func(c *wire.CommunicateRequest) {
		c.Instruction, c.ChatModel = "i", &history.ModelRef{Provider: ops.CLIProviderName, Model: "fake"}
	}))
	var oe *ops.Error
	if !errors.As(err, &oe) || oe.Code != ops.CodeInvalidRequest || !strings.Contains(oe.Message, `provider "cli"`) {
		t.Fatalf("err = %v", err)
	}
}

// 0024-D4-05: outcomes pair strictly with calls; a recorded act stage
// whose outcomes do not match the round's calls ends the invocation.
func TestLNDLMiddle_0024_D4_05_outcomes_pair_with_calls(t *testing.T) {
	e := newLNDLEngine(t)
	// A stage recorded with one outcome, for a round of two calls.
	req := ops.Request{ID: "r/middle/round1/act", Verb: "operate", BranchID: "b"}
	if _, err := ops.CommitEvent(context.Background(), e, req, "b", history.Event{},
		&ops.Result{Value: json.RawMessage(`[{"alias":"a","function":"add","output":3}]`), BranchID: "b"}, nil); err != nil {
		t.Fatal(err)
	}
	cli := &cliReplies{replies: map[string]string{
		"/round1": `"` + "```lndl\\n<lact a>add(x=1, y=2)</lact>\\n<lact u>upper(s=\\\"go\\\")</lact>\\n```" + `"`,
	}}
	_, err := ops.LNDLMiddleExchange(context.Background(), e, cli, middleIn(ops.MiddleInput{RequestID: "r/middle", BranchID: "b"}, func(c *wire.CommunicateRequest) {
		c.Instruction, c.ChatModel = "i", &history.ModelRef{Provider: ops.CLIProviderName, Model: "fake"}
	}))
	var oe *ops.Error
	if !errors.As(err, &oe) || oe.Code != ops.CodeInternal || !strings.Contains(oe.Message, "1 action outcomes for 2 calls") {
		t.Fatalf("err = %v", err)
	}
}

// compactValue re-encodes the JSON raw compactly, as the engine does.
func compactValue(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(buf.String(), "\n")
}
