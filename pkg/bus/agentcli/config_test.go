package agentcli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest/modelapi"
)

// docsConfig is the file holding the tested --cli-config example.
const docsConfig = "../../../docs/agent-clis.md"

// docCommand returns the CLI name of the --cli-config example of
// docs/agent-clis.md, as the tests run it: $API the loopback server's
// URL, $HOME a temporary directory, the program the installed CLI's path,
// a temporary working directory, and mark added to the environment.
func docCommand(t *testing.T, name string, api *modelapi.Server, mark string) cli.Command {
	t.Helper()
	b, err := os.ReadFile(docsConfig)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- agent-clis-config -->\n```json\n")
	block, _, ok2 := strings.Cut(rest, "\n```")
	if !ok || !ok2 {
		t.Fatalf("%s holds no tested --cli-config block", docsConfig)
	}
	var entries []struct {
		Name    string   `json:"name"`
		Command []string `json:"command"`
		Env     []string `json:"env"`
		Format  string   `json:"format"`
	}
	if err := json.Unmarshal([]byte(block), &entries); err != nil {
		t.Fatalf("%s: the --cli-config block: %v", docsConfig, err)
	}
	home := t.TempDir()
	subst := strings.NewReplacer("$API", api.URL, "$HOME", home)
	for _, e := range entries {
		if e.Name != name {
			continue
		}
		c := cli.Command{Name: "agent", Dir: t.TempDir(), Format: cli.Format(e.Format)}
		c.Argv = append(c.Argv, clitest.AgentCLI(t, e.Command[0]))
		for _, a := range e.Command[1:] {
			c.Argv = append(c.Argv, subst.Replace(a))
		}
		for _, kv := range e.Env {
			c.Env = append(c.Env, subst.Replace(kv))
		}
		c.Env = append(c.Env, mark)
		if name == "gemini" {
			// With GOOGLE_GEMINI_BASE_URL alone the CLI picks its "gateway"
			// auth, which -p refuses: the API key auth is chosen in the
			// settings (docs/agent-clis.md).
			if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
				t.Fatal(err)
			}
			settings := `{"security": {"auth": {"selectedType": "gemini-api-key"}}}`
			if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	t.Fatalf("%s: no CLI %q in the --cli-config block", docsConfig, name)
	return cli.Command{}
}

func claudeCommand(t *testing.T, api *modelapi.Server, mark string) cli.Command {
	return docCommand(t, "claude", api, mark)
}

func codexCommand(t *testing.T, api *modelapi.Server, mark string) cli.Command {
	return docCommand(t, "codex", api, mark)
}

func geminiCommand(t *testing.T, api *modelapi.Server, mark string) cli.Command {
	return docCommand(t, "gemini", api, mark)
}
