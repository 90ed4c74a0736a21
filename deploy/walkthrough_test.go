package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// walkthroughHeading is the README section the test runs.
const walkthroughHeading = "## On plain hosts (no containers)"

// walkthroughBlocks returns the ```sh blocks of the README section
// walkthroughHeading, in order.
func walkthroughBlocks(t *testing.T) []string {
	t.Helper()
	readme := read(t, "README.md")
	start := strings.Index(readme, "\n"+walkthroughHeading+"\n")
	if start < 0 {
		t.Fatalf("README.md has no section %q", walkthroughHeading)
	}
	section := readme[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(section, "\n") {
		switch {
		case !in && line == "```sh":
			in, cur = true, nil
		case in && line == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, line)
		}
	}
	if in {
		t.Fatalf("README.md, %s: a ```sh block is not closed", walkthroughHeading)
	}
	return blocks
}

// claimLine is a line of a block showing what the command above prints: a
// comment of exactly three spaces, then the text (continued comments use
// four). " ... " in it separates fragments that appear in that order on one
// line of the output.
var claimLine = regexp.MustCompile(`^#   (\S.*)$`)

// claims returns the claimed output of a block, one group per run of
// consecutive claim lines (the output of the commands above it).
func claims(block string) [][]string {
	var groups [][]string
	var cur []string
	for _, line := range strings.Split(block, "\n") {
		if m := claimLine.FindStringSubmatch(line); m != nil {
			cur = append(cur, strings.TrimSpace(m[1]))
			continue
		}
		if cur != nil {
			groups, cur = append(groups, cur), nil
		}
	}
	if cur != nil {
		groups = append(groups, cur)
	}
	return groups
}

// checkClaims checks that every claim appears in out, each group after
// the output the previous group matched (within a group in any order: the
// Python client's events and answers interleave), and each " ... "
// fragment of a claim after the one before it on the same line.
func checkClaims(t *testing.T, out string, groups [][]string) {
	t.Helper()
	from := 0
	for _, group := range groups {
		end := from
		for _, claim := range group {
			at, ok := findClaim(out[from:], claim)
			if !ok {
				t.Errorf("the output lacks %q (after offset %d)", claim, from)
				continue
			}
			end = max(end, from+at)
		}
		from = end
	}
}

// findClaim returns where in out the last fragment of claim ends, for the
// first line of out holding its fragments in order.
func findClaim(out, claim string) (int, bool) {
	frags := strings.Split(claim, " ... ")
	offset := 0
	for _, line := range strings.SplitAfter(out, "\n") {
		pos, ok := 0, true
		for _, f := range frags {
			i := strings.Index(line[pos:], f)
			if i < 0 {
				ok = false
				break
			}
			pos += i + len(f)
		}
		if ok {
			return offset + pos, true
		}
		offset += len(line)
	}
	return 0, false
}

// buildWalkthroughBinaries does what the section's first block does, into
// bin instead of the repository's bin/: make build, the go builds, and the
// PATH. Any other command in that block fails the test, so that the block
// cannot grow a step the test does not take.
func buildWalkthroughBinaries(t *testing.T, block, root, bin string) {
	t.Helper()
	env := []string{}
	for _, kv := range os.Environ() {
		// make test runs this test: the inner make must not join its jobserver.
		if !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "MFLAGS=") && !strings.HasPrefix(kv, "MAKELEVEL=") {
			env = append(env, kv)
		}
	}
	pathSet := false
	for _, line := range strings.Split(block, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		var cmd *exec.Cmd
		switch {
		case len(fields) == 0:
			continue
		case len(fields) == 2 && fields[0] == "make" && fields[1] == "build":
			cmd = exec.Command("make", "build", "BIN="+bin)
		case len(fields) > 4 && fields[0] == "go" && fields[1] == "build" && fields[2] == "-o" && fields[3] == "bin/":
			cmd = exec.Command("go", append([]string{"build", "-o", bin + "/"}, fields[4:]...)...)
		case len(fields) == 2 && fields[0] == "export" && fields[1] == "PATH=$PWD/bin:$PATH":
			pathSet = true
			continue
		default:
			t.Fatalf("the build block has a step the test does not know: %q", line)
		}
		cmd.Dir, cmd.Env = root, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
		}
	}
	if !pathSet {
		t.Fatal("the build block does not put bin/ on PATH")
	}
	for _, name := range []string{"worker", "publisher", "calculator", "notes", "nats-server"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			t.Fatalf("the build block does not build %s: %v", name, err)
		}
	}
}

// freePorts returns the first of n consecutive ports free on every
// interface, none of them in taken.
func freePorts(t *testing.T, n int, taken map[int]bool) int {
	t.Helper()
	for range 100 {
		base := 20000 + rand.IntN(30000)
		ok := true
		var ls []net.Listener
		for p := base; p < base+n && ok; p++ {
			l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
			if err != nil || taken[p] {
				ok = false
			}
			if err == nil {
				ls = append(ls, l)
			}
		}
		for _, l := range ls {
			_ = l.Close()
		}
		if ok {
			for p := base; p < base+n; p++ {
				taken[p] = true
			}
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
}

// The walkthrough of README.md's section on plain hosts, run as written:
// its first block's builds (into a temp dir), then its commands in one
// bash with -e: three nats-servers from nats/nats.conf, two workers, the
// tool services, requests from the publisher and the Python client, a node
// stopped, a clean stop. The output must hold what the section's comments
// claim; the nodes must have refused nothing and every process must be
// gone at the end.
func TestWalkthrough_plain_hosts(t *testing.T) {
	for _, tool := range []string{"bash", "make", "go", "curl", "openssl", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the walkthrough needs %s: %v", tool, err)
		}
	}
	blocks := walkthroughBlocks(t)
	if len(blocks) != 2 {
		t.Fatalf("the section has %d ```sh blocks; want 2 (the build, then the walkthrough)", len(blocks))
	}
	build, script := blocks[0], blocks[1]
	if strings.Contains(script, "--password ") || strings.Contains(script, "--password=") {
		t.Error("a password is given on a command line: use --password-file")
	}
	groups := claims(script)
	if len(groups) < 10 {
		t.Fatalf("the walkthrough claims %d outputs; the check would see little", len(groups))
	}

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	start := time.Now()
	buildWalkthroughBinaries(t, build, root, bin)
	t.Logf("built the binaries in %v", time.Since(start).Round(time.Millisecond))

	// The commands run in a directory of their own, with the repository's
	// deploy/ and examples/ in it, as in the repository root.
	work := t.TempDir()
	for _, dir := range []string{"deploy", "examples"} {
		if err := os.Symlink(filepath.Join(root, dir), filepath.Join(work, dir)); err != nil {
			t.Fatal(err)
		}
	}
	taken := map[int]bool{}
	ports := map[string]int{}
	for _, v := range []string{"NATS_PORT", "ROUTE_PORT", "MONITOR_PORT"} {
		ports[v] = freePorts(t, 3, taken)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LIONBUS_") && !strings.HasPrefix(kv, "NATS_") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"XDG_CONFIG_HOME="+filepath.Join(work, "config")) // no saved publisher contexts
	for v, p := range ports {
		env = append(env, fmt.Sprintf("%s=%d", v, p))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = work, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The commands start servers in the background: they all stay in the
	// process group of bash, which the test kills whatever happens.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	err = cmd.Wait()
	out := stdout.String()
	t.Logf("ran the walkthrough in %v", time.Since(start).Round(time.Millisecond))
	logs := func() string {
		var b strings.Builder
		paths, _ := filepath.Glob(filepath.Join(work, "data", "logs", "*.log"))
		for _, p := range paths {
			data, _ := os.ReadFile(p)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			fmt.Fprintf(&b, "--- %s (last lines)\n%s\n", filepath.Base(p), strings.Join(lines[max(0, len(lines)-15):], "\n"))
		}
		return b.String()
	}
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\nstdout:\n%s\nstderr:\n%s\n%s", err, out, stderr.String(), logs())
	}
	checkClaims(t, out, groups)
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr.String())
	}

	// The clean stop left nothing running.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Kill(-pgid, 0)
		if errors.Is(err, syscall.ESRCH) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("processes the walkthrough started still run after its clean stop (kill -0: %v)", err)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Each node kept JetStream in its own NATS_STORE_DIR.
	for i := 1; i <= 3; i++ {
		if _, err := os.Stat(filepath.Join(work, "data", fmt.Sprintf("nats-%d", i), "jetstream")); err != nil {
			t.Errorf("node %d: %v", i, err)
		}
	}
	// The servers refused nothing any of the users did, and both workers
	// drained.
	for _, name := range []string{"nats-1", "nats-2", "nats-3", "worker-1", "worker-2", "calculator", "notes"} {
		data, err := os.ReadFile(filepath.Join(work, "data", "logs", name+".log"))
		if err != nil {
			t.Error(err)
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "Violation") {
				t.Errorf("%s: %s", name, line)
			}
		}
		if strings.HasPrefix(name, "worker") && !strings.Contains(string(data), "worker drained") {
			t.Errorf("%s did not drain:\n%s", name, data)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "lionbus worker") {
			t.Log(line) // which node each worker used
		}
	}
}
