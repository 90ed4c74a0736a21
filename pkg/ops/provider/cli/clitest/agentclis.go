package clitest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// AgentCLIsEnv names the variable that points the tests at the directory
// holding the real coding-agent CLIs' executables; by default they are
// looked for in .tools/agent-clis/node_modules/.bin of the repository
// (where `make agent-clis` installs them).
const AgentCLIsEnv = "LIONBUS_AGENT_CLIS"

// AgentCLI returns the path of the real CLI name (claude, codex, gemini).
// Without it the test is skipped, except in CI ($CI set), where it fails:
// CI installs the CLIs and must run these tests.
func AgentCLI(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv(AgentCLIsEnv)
	if dir == "" {
		if root, ok := repoRoot(); ok {
			dir = filepath.Join(root, ".tools", "agent-clis", "node_modules", ".bin")
		}
	}
	p := filepath.Join(dir, name)
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("the %s CLI is not installed in %s; run `make agent-clis`", name, dir)
	}
	t.Skipf("the %s CLI is not installed (run `make agent-clis`)", name)
	return ""
}

// repoRoot finds the directory of go.mod above the working directory.
func repoRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", false
		}
		dir = up
	}
}

// Marked returns the processes whose environment holds the variable
// assignment mark (KEY=VALUE): a test gives a CLI a unique mark, which
// every process it starts inherits, and counts them.
func Marked(mark string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if kv == mark {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// Comm returns the command name of pid ("" when it is gone).
func Comm(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// SessionOf returns the session id of pid (-1 when it is gone).
func SessionOf(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return -1
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 4 {
		return -1
	}
	sid, _ := strconv.Atoi(f[3])
	return sid
}
