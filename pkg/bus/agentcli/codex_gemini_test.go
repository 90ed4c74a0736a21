package agentcli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest/modelapi"
)

// codexCommand is the Codex CLI command of the tests: `codex exec --json`
// with a model provider whose base URL is the loopback Responses API, the
// sandbox off (the test's directory is the workspace; Codex's own sandbox
// needs namespaces the CI container may not grant), approvals never asked
// (exec's default).
func codexCommand(t *testing.T, api *modelapi.Server, mark string) cli.Command {
	home := t.TempDir()
	return cli.Command{
		Name: "agent",
		Argv: []string{clitest.AgentCLI(t, "codex"), "exec", "--json", "--skip-git-repo-check", "-s", "danger-full-access", "-m", "gpt-5",
			"-c", "model_provider=lionbus", "-c", `model_providers.lionbus.name="lionbus"`,
			"-c", `model_providers.lionbus.base_url="` + api.URL + `/v1"`, "-c", `model_providers.lionbus.env_key="LIONBUS_OPENAI_KEY"`,
			"-c", `model_providers.lionbus.wire_api="responses"`},
		Dir: t.TempDir(),
		Env: []string{"HOME=" + home, "CODEX_HOME=" + home, "LIONBUS_OPENAI_KEY=lionbus-test-key", mark},
	}
}

// geminiCommand is the Gemini CLI command of the tests: the shell tool
// allowed by name, the Gemini API at the loopback server.
func geminiCommand(t *testing.T, api *modelapi.Server, mark string) cli.Command {
	home := t.TempDir()
	// With GOOGLE_GEMINI_BASE_URL alone the CLI picks its "gateway" auth,
	// which -p refuses: the API key auth is chosen in the settings.
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	settings := `{"security": {"auth": {"selectedType": "gemini-api-key"}}}`
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	return cli.Command{
		Name: "agent",
		Argv: []string{clitest.AgentCLI(t, "gemini"), "--allowed-tools", "run_shell_command", "-m", "gemini-2.5-flash"},
		Dir:  t.TempDir(),
		Env:  []string{"HOME=" + home, "GEMINI_API_KEY=lionbus-test-key", "GOOGLE_GEMINI_BASE_URL=" + api.URL, "GEMINI_CLI_TRUST_WORKSPACE=true", mark},
	}
}

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
