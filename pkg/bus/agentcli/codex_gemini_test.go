package agentcli_test

import (
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest/modelapi"
)

// codexTool is how the Codex CLI reports the TOOL call: a
// command_execution item under its own id, the command wrapped in a
// shell.
var codexTool = toolWant{name: "command_execution", input: "command"}

// The real Codex CLI through run: tool call and result, then a resume.
func TestCodex_run_tool_then_resume(t *testing.T) {
	t.Parallel()
	checkResume(t, newAgentBus(t, codexCommand, modelapi.NewOpenAI), codexTool)
}

// The real Codex CLI through operate's run_and_collect middle.
func TestCodex_operate_run_and_collect(t *testing.T) {
	t.Parallel()
	checkOperate(t, newAgentBus(t, codexCommand, modelapi.NewOpenAI), codexTool)
}

// The real Codex CLI: a cancel mid-tool leaves no process.
func TestCodex_cancel_mid_tool(t *testing.T) {
	t.Parallel()
	checkCancelMidTool(t, newAgentBus(t, codexCommand, modelapi.NewOpenAI))
}

// The real Codex CLI: an API error is run.failed with its message.
func TestCodex_api_error(t *testing.T) {
	t.Parallel()
	checkAPIError(t, newAgentBus(t, codexCommand, modelapi.NewOpenAI))
}

// geminiTool is how the Gemini CLI reports the TOOL call: the model's
// tool, under an id of the CLI's (the tool's name and the model's id).
var geminiTool = toolWant{id: "run_shell_command__toolu_lb_echo", name: "run_shell_command", input: "command", deltas: true}

// The real Gemini CLI through run: tool call and result, then a resume.
func TestGemini_run_tool_then_resume(t *testing.T) {
	t.Parallel()
	checkResume(t, newAgentBus(t, geminiCommand, modelapi.NewGemini), geminiTool)
}

// The real Gemini CLI through operate's run_and_collect middle.
func TestGemini_operate_run_and_collect(t *testing.T) {
	t.Parallel()
	checkOperate(t, newAgentBus(t, geminiCommand, modelapi.NewGemini), geminiTool)
}

// The real Gemini CLI: a cancel mid-tool leaves no process.
func TestGemini_cancel_mid_tool(t *testing.T) {
	t.Parallel()
	checkCancelMidTool(t, newAgentBus(t, geminiCommand, modelapi.NewGemini))
}

// The real Gemini CLI: an API error is run.failed with its message.
func TestGemini_api_error(t *testing.T) {
	t.Parallel()
	checkAPIError(t, newAgentBus(t, geminiCommand, modelapi.NewGemini))
}
