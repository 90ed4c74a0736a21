// Package historyverify_test checks an export written by package
// histexport with verify.py, a verifier written from docs/history.md
// alone, in Python with its standard library.
package historyverify_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/histexport"
	"github.com/lionbus/lionbus/pkg/wire"
)

// export is a history of every event type written by histexport.
func export(t *testing.T) []byte {
	t.Helper()
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	var buf bytes.Buffer
	w, err := histexport.NewWriter(&buf, histexport.Header{BranchID: "py", ExportedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []wire.Event{
		{Seq: 2, Type: wire.EventCreated, RequestID: "c", Time: at, Settings: &wire.Settings{System: "sé <brief>"}},
		{Seq: 3, Type: wire.EventMessages, RequestID: "m", Time: at, Messages: []wire.Message{{ID: "1", Kind: wire.KindInstruction, Role: wire.RoleUser, CreatedAt: at, Content: map[string]any{"instruction": "☃ & \"x\""}}}, Result: json.RawMessage(`{"value":1}`)},
		{Seq: 7, Type: wire.EventCleared, RequestID: "k", Time: at},
		{Seq: 8, Type: wire.EventUpdated, RequestID: "u", Time: at, Settings: &wire.Settings{Notes: map[string]any{"n": 1}}},
	} {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// verify runs verify.py on file and returns its exit code and output.
func verify(t *testing.T, file []byte) (int, string, string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the Python verifier cannot run")
	}
	path := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(python, "verify.py", path)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errOut.String()
	}
	t.Fatalf("verify.py: %v", err)
	return 0, "", ""
}

// The Python verifier accepts what histexport writes, with the same
// summary and head hash, and rejects each tampering at the line
// histexport.Verify names.
func TestPythonVerifier_agrees_with_histexport(t *testing.T) {
	good := export(t)
	code, out, errOut := verify(t, good)
	if code != 0 {
		t.Fatalf("verify.py rejects a good export: %d %s", code, errOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	s, err := histexport.Verify(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if got["head"] != s.Head || got["events"] != float64(s.Events) || got["last_seq"] != float64(s.LastSeq) || got["lines"] != float64(s.Lines) {
		t.Fatalf("verify.py says %v; histexport %+v", got, s)
	}

	lines := strings.SplitAfter(string(good), "\n")
	lines = lines[:len(lines)-1]
	join := func(ls ...string) []byte { return []byte(strings.Join(ls, "")) }
	tests := []struct {
		name string
		file []byte
	}{
		{"one byte edited", bytes.Replace(good, []byte("brief"), []byte("brieF"), 1)},
		{"a line dropped", join(append(append([]string{}, lines[:2]...), lines[3:]...)...)},
		{"a pair swapped", join(lines[0], lines[2], lines[1], lines[3], lines[4], lines[5])},
		{"the end dropped", join(lines[:5]...)},
		{"a line repeated", join(lines[0], lines[1], lines[1], lines[2], lines[3], lines[4], lines[5])},
		{"no final newline", good[:len(good)-1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := histexport.Verify(bytes.NewReader(tt.file))
			var le *histexport.LineError
			if !errors.As(err, &le) {
				t.Fatalf("histexport.Verify = %v", err)
			}
			code, _, errOut := verify(t, tt.file)
			if want := "line " + itoa(le.Line) + ": "; code != 1 || !strings.HasPrefix(errOut, want) {
				t.Fatalf("verify.py: exit %d, %q; want exit 1 and %q (histexport: %v)", code, errOut, want, err)
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
