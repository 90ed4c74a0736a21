package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// branchJSON is the branch id on url, as publisher --json branch get
// prints it, without what names its place in its cluster (id, seq,
// commit sequences).
func branchJSON(t *testing.T, url, id string) map[string]any {
	t.Helper()
	code, out, errOut := call(t, "", "--nats", url, "--json", "branch", "get", id)
	if code != exitOK {
		t.Fatalf("branch get %s: %d %s", id, code, errOut)
	}
	var r struct {
		Value map[string]any `json:"value"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("branch get %s: %v\n%s", id, err, out)
	}
	delete(r.Value, "id")
	delete(r.Value, "seq")
	commits, _ := r.Value["commits"].(map[string]any)
	for k := range commits {
		commits[k] = 0
	}
	return r.Value
}

// TestPublisher_branch_export_verify_import: export a branch to a file,
// verify it, find each kind of tampering at its line, refuse to import a
// tampered file (importing nothing), and rebuild the branch from the
// good one on a second server under another id.
func TestPublisher_branch_export_verify_import(t *testing.T) {
	src := startWorker(t, "lion")
	dst := startWorker(t, "lion")
	for _, args := range [][]string{
		{"branch", "create", "--id", "h1", "--system", "be brief", "--chat-model", "scripted:echo"},
		{"communicate", "--branch", "h1", "--instruction", "one"},
		{"communicate", "--branch", "h1", "--instruction", "two", "--clear-messages"},
		{"branch", "clear", "h1"},
		{"communicate", "--branch", "h1", "--instruction", "three"},
	} {
		if code, _, errOut := call(t, "", append([]string{"--nats", src}, args...)...); code != exitOK {
			t.Fatalf("%v: %d %s", args, code, errOut)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "h1.jsonl")
	runStep(t, step{name: "export", wantOut: []string{"exported 5 events of branch h1"}, stdin: "", args: []string{"--nats", src, "branch", "export", "h1", "--out", file}})
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := call(t, "", "--nats", src, "branch", "export", "h1")
	if code != exitOK || strings.Count(stdout, "\n") != 7 {
		t.Fatalf("export to stdout: %d, %d lines", code, strings.Count(stdout, "\n"))
	}
	runStep(t, step{name: "verify", wantOut: []string{"good: lionbus.history/2 export of branch h1, 5 events", "7 lines"}, stdin: "", args: []string{"branch", "verify", file}})
	runStep(t, step{name: "verify stdin", wantOut: []string{"good:"}, stdin: string(good), args: []string{"branch", "verify", "-"}})
	runStep(t, step{name: "verify --json", wantOutRE: `"events": 5,[\s\S]*"lines": 7,[\s\S]*"head": "[0-9a-f]{64}"`, args: []string{"--json", "branch", "verify", file}})

	lines := strings.SplitAfter(string(good), "\n")
	lines = lines[:len(lines)-1]
	edited := []byte(string(good))
	at := strings.Index(string(good), "three")
	edited[at] = 'T'
	editedLine := strings.Count(string(good[:at]), "\n") + 1
	tampered := []struct {
		name string
		body string
		line string
	}{
		{"one byte edited", string(edited), "line " + itoa(editedLine) + ":"},
		{"a line dropped", strings.Join(append(append([]string{}, lines[:3]...), lines[4:]...), ""), "line 4:"},
		{"a pair swapped", lines[0] + lines[1] + lines[3] + lines[2] + strings.Join(lines[4:], ""), "line 3:"},
		{"the end dropped", strings.Join(lines[:len(lines)-1], ""), "line 7:"},
	}
	for _, tt := range tampered {
		t.Run(tt.name, func(t *testing.T) {
			bad := filepath.Join(dir, "bad.jsonl")
			if err := os.WriteFile(bad, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			runStep(t, step{name: "verify", wantCode: exitFailed, wantErr: []string{"branch verify " + bad + ": " + tt.line}, stdin: "", args: []string{"branch", "verify", bad}})
			runStep(t, step{name: "import", wantCode: exitFailed, wantErr: []string{"nothing imported: " + tt.line}, stdin: "", args: []string{"--nats", dst, "branch", "import", bad, "--id", "tampered"}})
			runStep(t, step{name: "nothing imported", wantCode: exitFailed, wantErr: []string{"branch_not_found"}, stdin: "", args: []string{"--nats", dst, "branch", "get", "tampered"}})
		})
	}

	runStep(t, step{name: "import", wantOut: []string{"imported 5 events of branch h1 into branch h1-copy"}, stdin: "", args: []string{"--nats", dst, "branch", "import", file, "--id", "h1-copy", "--page-bytes", "1500"}})
	if a, b := branchJSON(t, src, "h1"), branchJSON(t, dst, "h1-copy"); !reflect.DeepEqual(a, b) {
		t.Fatalf("imported branch differs:\n src %v\n dst %v", a, b)
	}
	runStep(t, step{name: "import again", wantCode: exitFailed, wantErr: []string{`already exists: "h1-copy"`}, stdin: "", args: []string{"--nats", dst, "branch", "import", file, "--id", "h1-copy"}})
	runStep(t, step{name: "no file", wantCode: exitFailed, wantErr: []string{"no such file"}, stdin: "", args: []string{"branch", "verify", filepath.Join(dir, "missing")}})
	runStep(t, step{name: "import from stdin", wantCode: exitUsage, wantErr: []string{"not standard input"}, stdin: string(good), args: []string{"--nats", dst, "branch", "import", "-"}})
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// runStep runs s and checks what it printed.
func runStep(t *testing.T, s step) {
	t.Helper()
	code, stdout, stderr := call(t, s.stdin, s.args...)
	s.check(t, code, stdout, stderr)
}
