package agentcli_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest/modelapi"
	"github.com/lionbus/lionbus/pkg/wire"
)

// The words of a prompt that steer the scripted model.
const (
	toolOutput = "lionbus-tool-output-7f3a"
	apiFailure = "lionbus scripted failure: the prompt was refused"
)

// script answers a CLI's model requests: TOOL asks for a Bash command
// printing toolOutput, SLEEP for one that never ends (Claude Code refuses
// a plain sleep), FAIL is an API error;
// a request carrying a tool result gets a text echoing it; anything else
// a short text.
func script(x modelapi.Exchange) modelapi.Reply {
	for id, out := range x.ToolResults {
		if strings.Contains(out, toolOutput) {
			out = toolOutput // Codex wraps the output in a report of its own
		}
		return modelapi.Reply{Text: fmt.Sprintf("The command printed %s (call %s).", strings.TrimSpace(out), id)}
	}
	shell := func(id, command string) *modelapi.ToolCall {
		switch {
		case strings.HasPrefix(x.Path, "/v1/responses"): // Codex
			return &modelapi.ToolCall{ID: id, Name: "exec_command", Input: map[string]any{"cmd": command}}
		case strings.Contains(x.Path, "models/"): // Gemini
			return &modelapi.ToolCall{ID: id, Name: "run_shell_command", Input: map[string]any{"command": command, "description": "run it"}}
		}
		return &modelapi.ToolCall{ID: id, Name: "Bash", Input: map[string]any{"command": command, "description": "run it"}}
	}
	switch {
	case strings.Contains(x.Prompt, "FAIL"):
		return modelapi.Reply{Error: &modelapi.APIError{Status: 400, Message: apiFailure}}
	case strings.Contains(x.Prompt, "TOOL"):
		return modelapi.Reply{Text: "Running it.", Tool: shell("toolu_lb_echo", "echo "+toolOutput)}
	case strings.Contains(x.Prompt, "DENY"):
		return modelapi.Reply{Text: "Writing it.", Tool: &modelapi.ToolCall{ID: "toolu_lb_deny", Name: "Write",
			Input: map[string]any{"file_path": "/nonexistent-lionbus/denied.txt", "content": "x"}}}
	case strings.Contains(x.Prompt, "SLEEP"):
		return modelapi.Reply{Text: "Waiting.", Tool: shell("toolu_lb_sleep", "tail -f /dev/null")}
	}
	return modelapi.Reply{Text: "Hello from the loopback model."}
}

// agentBus is a bus whose worker serves one real CLI as cli:agent, with
// branch b1 on it.
type agentBus struct {
	*bustest.Bus
	api  *modelapi.Server
	mark string // KEY=VALUE in the environment of every process of the CLI
}

func newAgentBus(t *testing.T, command func(*testing.T, *modelapi.Server, string) cli.Command, newAPI func(testing.TB, modelapi.Script) *modelapi.Server) *agentBus {
	t.Helper()
	ab := &agentBus{Bus: bustest.New(t, provision.Config{}), mark: fmt.Sprintf("LIONBUS_TEST_MARK=%s-%d", t.Name(), time.Now().UnixNano())}
	ab.api = newAPI(t, script)
	prov, err := cli.New(command(t, ab.api, ab.mark))
	if err != nil {
		t.Fatal(err)
	}
	prov.KillGrace = 2 * time.Second
	ab.StartServiceWith(t, nil, nil, map[string]ops.Provider{cli.Name: prov}, worker.Config{}, nil)
	bustest.MustResult(t, ab.Do(t, "branch.create", "", map[string]any{"branch_id": "b1", "system": "be brief", "chat_model": "cli:agent"}), nil)
	return ab
}

// run runs instruction on b1 and returns the chunks and the answer.
func (ab *agentBus) run(t *testing.T, instruction string) ([]ops.Chunk, *client.Reply) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var got []ops.Chunk
	id, err := ab.Client.Submit(ctx, "run", "b1", wire.RunRequest{Turn: wire.Turn{Prompt: wire.Prompt{Instruction: instruction}}})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := ab.Client.Follow(ctx, id, 0, func(c ops.Chunk) error {
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, reply
}

func (ab *agentBus) messages(t *testing.T) []history.Message {
	t.Helper()
	var b history.Branch
	bustest.MustResult(t, ab.Do(t, "branch.get", "b1", nil), &b)
	return b.Messages
}

// mainExchanges are the requests of the agent's own turns (with tools),
// leaving out any side request a CLI makes.
func (ab *agentBus) mainExchanges() []modelapi.Exchange {
	var out []modelapi.Exchange
	for _, x := range ab.api.Exchanges() {
		if x.Tools > 0 {
			out = append(out, x)
		}
	}
	return out
}

func chunksOf(cs []ops.Chunk, kind ops.ChunkKind) []ops.Chunk {
	var out []ops.Chunk
	for _, c := range cs {
		if c.Kind == kind {
			out = append(out, c)
		}
	}
	return out
}

// toolWant is how a CLI reports the TOOL call: the tool id ("" for one
// of the CLI's own, not the model's), the tool name and the input field
// holding the command.
// deltas is whether the CLI streams partial text.
type toolWant struct {
	id, name, input string
	deltas          bool
}

// claudeTool is how Claude Code reports it: the model's call.
var claudeTool = toolWant{id: "toolu_lb_echo", name: "Bash", input: "command", deltas: true}

// checkToolRun checks a run that made the TOOL call: its tool_use and
// tool_result chunks and the recorded action request and response carry
// the model's call id, the result holds the command's output, text came
// in deltas, and the answer holds the final text.
func checkToolRun(t *testing.T, ab *agentBus, got []ops.Chunk, reply *client.Reply, want toolWant) ops.RunValue {
	t.Helper()
	var rv ops.RunValue
	bustest.MustResult(t, reply, &rv)
	uses, results := chunksOf(got, ops.ChunkToolUse), chunksOf(got, ops.ChunkToolResult)
	if len(uses) != 1 || uses[0].ToolID == "" || (want.id != "" && uses[0].ToolID != want.id) || uses[0].ToolName != want.name ||
		!strings.Contains(fmt.Sprint(uses[0].ToolInput[want.input]), "echo "+toolOutput) {
		t.Fatalf("tool_use chunks %+v, want %+v", uses, want)
	}
	wantID := uses[0].ToolID
	if len(results) != 1 || results[0].ToolID != wantID || !strings.Contains(fmt.Sprint(results[0].ToolOutput), toolOutput) || results[0].IsError {
		t.Fatalf("tool_result chunks %+v", results)
	}
	deltas := 0
	for _, c := range chunksOf(got, ops.ChunkText) {
		if c.IsDelta {
			deltas++
		}
	}
	if want.deltas && deltas < 2 {
		t.Errorf("%d text deltas; want the streamed answer in pieces", deltas)
	}
	if rv.Text == nil || !strings.Contains(*rv.Text, "The command printed "+toolOutput) || rv.SessionID == "" {
		t.Fatalf("value %+v", rv)
	}
	var req, resp *history.Message
	ms := ab.messages(t)
	for i := range ms {
		switch ms[i].Kind {
		case history.KindActionRequest:
			req = &ms[i]
		case history.KindActionResponse:
			resp = &ms[i]
		}
	}
	if req == nil || resp == nil || req.Metadata["tool_id"] != wantID || !strings.Contains(fmt.Sprint(resp.Content), toolOutput) {
		t.Fatalf("recorded action request %+v, response %+v", req, resp)
	}
	return rv
}

// The real Claude Code through run: the tool call and its result recorded
// with the model's id; the second run resumes the session and its prompt
// holds only the new instruction, not the first run's output again.
func TestClaudeCode_run_tool_then_resume(t *testing.T) {
	t.Parallel()
	ab := newAgentBus(t, claudeCommand, modelapi.NewAnthropic)
	checkResume(t, ab, claudeTool)
}

// checkResume runs TOOL, then a second instruction on the same branch.
func checkResume(t *testing.T, ab *agentBus, want toolWant) {
	t.Helper()
	got, reply := ab.run(t, "TOOL: print the marker")
	rv1 := checkToolRun(t, ab, got, reply, want)
	if !slices.ContainsFunc(ab.mainExchanges(), func(x modelapi.Exchange) bool { return x.ToolResults["toolu_lb_echo"] != "" }) {
		t.Fatal("the tool result never reached the model")
	}
	before := len(ab.mainExchanges())
	_, reply = ab.run(t, "and now say hello")
	var rv2 ops.RunValue
	bustest.MustResult(t, reply, &rv2)
	xs := ab.mainExchanges()[before:]
	if len(xs) != 1 {
		t.Fatalf("%d model requests in the second run", len(xs))
	}
	x := xs[0]
	if strings.Contains(x.Prompt, toolOutput) || strings.Contains(x.Prompt, "Context:") || !strings.Contains(x.Prompt, "and now say hello") {
		t.Errorf("second prompt %q repeats the first run's context", x.Prompt)
	}
	// The session holds the first run: its prompt and its tool result.
	if !slices.ContainsFunc(x.UserTexts, func(s string) bool { return strings.Contains(s, "TOOL: print the marker") }) || x.ToolResults["toolu_lb_echo"] == "" {
		t.Errorf("the resumed request does not hold the first run: %q, %v", x.UserTexts, x.ToolResults)
	}
	if rv2.SessionID != rv1.SessionID {
		t.Errorf("session %q after resuming %q", rv2.SessionID, rv1.SessionID)
	}
}

// The real Claude Code through operate's run_and_collect middle: the
// collected text, and the tool call recorded with its id.
func TestClaudeCode_operate_run_and_collect(t *testing.T) {
	t.Parallel()
	ab := newAgentBus(t, claudeCommand, modelapi.NewAnthropic)
	checkOperate(t, ab, claudeTool)
}

func checkOperate(t *testing.T, ab *agentBus, want toolWant) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	reply, err := ab.Client.Do(ctx, "operate", "b1", map[string]any{"instruction": "TOOL: print the marker", "middle": ops.MiddleRunAndCollect, "skip_validation": true})
	if err != nil {
		t.Fatal(err)
	}
	bustest.CheckSchema(t, reply)
	var text string
	bustest.MustResult(t, reply, &text)
	if !strings.Contains(text, "The command printed "+toolOutput) {
		t.Errorf("collected %q", text)
	}
	var ids []any
	for _, m := range ab.messages(t) {
		switch m.Kind {
		case history.KindActionRequest:
			ids = append(ids, m.Metadata["tool_id"])
		case history.KindActionResponse:
			if !strings.Contains(fmt.Sprint(m.Content), toolOutput) {
				t.Errorf("recorded action response %+v", m.Content)
			}
		}
	}
	if len(ids) != 1 || ids[0] == "" || ids[0] == nil || (want.id != "" && ids[0] != want.id) {
		t.Errorf("recorded tool ids %v, want %+v", ids, want)
	}
}

// The real Claude Code: a cancel while its Bash command runs (in a
// session of its own, outside the CLI's process group) ends the run
// cleanly and leaves no process of the CLI behind.
func TestClaudeCode_cancel_mid_tool(t *testing.T) {
	t.Parallel()
	ab := newAgentBus(t, claudeCommand, modelapi.NewAnthropic)
	checkCancelMidTool(t, ab)
}

func checkCancelMidTool(t *testing.T, ab *agentBus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	id, err := ab.Client.Submit(ctx, "run", "b1", map[string]any{"instruction": "SLEEP for a while"})
	if err != nil {
		t.Fatal(err)
	}
	var sleeper, toolSession, cliSession int
	reply, err := ab.Client.Follow(ctx, id, 0, func(c ops.Chunk) error {
		if c.Kind != ops.ChunkToolUse || sleeper != 0 {
			return nil
		}
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && sleeper == 0; time.Sleep(50 * time.Millisecond) {
			for _, pid := range clitest.Marked(ab.mark) {
				switch clitest.Comm(pid) {
				case "tail":
					sleeper, toolSession = pid, clitest.SessionOf(pid)
				case "claude", "codex", "gemini":
					cliSession = clitest.SessionOf(pid)
				}
			}
		}
		if sleeper == 0 {
			return errors.New("the tool's process never started")
		}
		return ab.NC.Publish(ab.Res.Subjects.Cancel(id), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	var rv ops.RunValue
	bustest.MustResult(t, reply, &rv)
	if !rv.Canceled || sleeper == 0 {
		t.Fatalf("value %+v, tool process %d", rv, sleeper)
	}
	t.Logf("the tool's process %d ran in session %d, the CLI in %d", sleeper, toolSession, cliSession)
	if left := clitest.Marked(ab.mark); len(left) != 0 {
		var names []string
		for _, pid := range left {
			names = append(names, fmt.Sprintf("%d %s", pid, clitest.Comm(pid)))
		}
		t.Errorf("processes left after the cancel: %v", names)
	}
}

// The real Claude Code: an error from the model API fails the run
// (run.failed) with the provider's message.
func TestClaudeCode_api_error(t *testing.T) {
	t.Parallel()
	ab := newAgentBus(t, claudeCommand, modelapi.NewAnthropic)
	checkAPIError(t, ab)
}

func checkAPIError(t *testing.T, ab *agentBus) {
	t.Helper()
	got, reply := ab.run(t, "FAIL please")
	bustest.CheckSchema(t, reply)
	var re *client.RemoteError
	if err := reply.Err(); !errors.As(err, &re) || re.Code != ops.CodeProvider || !strings.Contains(re.Message, apiFailure) {
		t.Fatalf("answer %s, want %s with %q", reply.Data, ops.CodeProvider, apiFailure)
	}
	if errs := chunksOf(got, ops.ChunkError); len(errs) != 1 || !strings.Contains(errs[0].Content, apiFailure) {
		t.Errorf("error chunks %+v", errs)
	}
}

// The real Claude Code: a tool it may not use (Write is not in
// --allowedTools) is denied; the denial reaches the caller in a system
// chunk with the call's id and in the result's permission_denials.
func TestClaudeCode_permission_denied(t *testing.T) {
	t.Parallel()
	ab := newAgentBus(t, claudeCommand, modelapi.NewAnthropic)
	got, reply := ab.run(t, "DENY: write the file")
	bustest.MustResult(t, reply, nil)
	var notice, denials bool
	for _, c := range got {
		switch {
		case c.Kind == ops.ChunkSystem && c.Metadata["subtype"] == "permission_denied":
			notice = c.ToolID == "toolu_lb_deny" && c.Metadata["tool_name"] == "Write"
		case c.Kind == ops.ChunkResult:
			pd, _ := c.Metadata["permission_denials"].([]any)
			first, _ := firstOf(pd).(map[string]any)
			denials = len(pd) == 1 && first["tool_use_id"] == "toolu_lb_deny"
		}
	}
	res := chunksOf(got, ops.ChunkToolResult)
	if !notice || !denials || len(res) != 1 || !res[0].IsError || res[0].ToolID != "toolu_lb_deny" {
		t.Errorf("denial notice %v, permission_denials %v, tool results %+v", notice, denials, res)
	}
}

func firstOf(s []any) any {
	if len(s) == 0 {
		return nil
	}
	return s[0]
}
