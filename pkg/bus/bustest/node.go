package bustest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Node returns the path of node for a test that runs JavaScript. Without
// node the test is skipped, unless the environment variable CI is set:
// CI installs node, so there its absence fails the test.
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed, and CI must run the JavaScript tests (.ci/run installs node and npm)")
		}
		t.Skip("node is not installed: the JavaScript tests cannot run (CI installs node and runs them)")
	}
	return node
}

// RepoDir returns the directory of the repository (the one holding
// go.mod), found from this file's location.
func RepoDir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("bustest: cannot locate the repository")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// JSClientDir returns clients/js (the TypeScript SDK) ready to use: its npm
// dependencies installed (npm ci when node_modules is missing) and built
// (npm run build, into dist/ and build/). Test binaries running at the same
// time take turns (a lock file in the directory), so one build is never
// read half-written.
func JSClientDir(t testing.TB) string {
	t.Helper()
	Node(t)
	dir := filepath.Join(RepoDir(t), "clients", "js")
	NPMInstall(t, dir, "build")
	return dir
}

// NPMInstall runs npm ci in dir when its node_modules is missing, then
// each of scripts (npm run SCRIPT), holding dir's lock.
func NPMInstall(t testing.TB, dir string, scripts ...string) {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("%s needs npm, which is not installed", dir)
	}
	unlock := lockDir(t, dir)
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		if out, err := exec.Command(npm, "ci", "--prefix", dir, "--no-audit", "--no-fund").CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	for _, s := range scripts {
		cmd := exec.Command(npm, "run", "--silent", s)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm run %s in %s: %v\n%s", s, dir, err, out)
		}
	}
}
