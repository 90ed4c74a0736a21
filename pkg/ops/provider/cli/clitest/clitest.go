// Package clitest builds and inspects the fake coding-agent CLI
// (clitest/fakecli) that the CLI provider's tests, and the bus's, run as
// a real subprocess.
package clitest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// FakeCLIPackage is the import path of the fake CLI.
const FakeCLIPackage = "github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest/fakecli"

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	buildOut  []byte
)

// Build builds the fake CLI (once per test binary) and returns the path
// of the executable.
func Build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "fakecli-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, "fakecli"), FakeCLIPackage)
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("build the fake CLI: %v\n%s", buildErr, buildOut)
	}
	return filepath.Join(buildDir, "fakecli")
}

// Record is what one fake CLI process wrote about itself.
type Record struct {
	PID   int      `json:"pid"`
	Argv  []string `json:"argv"`
	Child int      `json:"child,omitempty"`
}

// Records reads the records the fake CLI processes wrote into dir
// ($FAKECLI_DIR), in no particular order.
func Records(t testing.TB, dir string) []Record {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []Record
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, r)
	}
	return out
}

// Arg returns the value after flag in argv, and whether flag is there.
func (r Record) Arg(flag string) (string, bool) {
	for i, a := range r.Argv {
		if a == flag {
			if i+1 < len(r.Argv) {
				return r.Argv[i+1], true
			}
			return "", true
		}
	}
	return "", false
}

// Gone reports whether process pid no longer runs: it does not exist,
// or it is a zombie left for its new parent to reap.
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// Reaped reports whether process pid is gone and reaped: not even a
// zombie is left.
func Reaped(pid int) bool {
	return syscall.Kill(pid, 0) == syscall.ESRCH
}

// WaitGone polls [Gone] until it holds or timeout passes: a process killed
// a moment ago may take that long to exit.
func WaitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !Gone(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
