// Package historyverify_test checks an export written by package
// histexport with verify.py, a verifier written from docs/history.md
// alone, in Python with its standard library.
package historyverify_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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

var at = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// fromCreation is a history from its creation, of most event types.
func fromCreation() []wire.Event {
	return []wire.Event{
		{Seq: 2, Type: wire.EventCreated, RequestID: "c", Time: at, Settings: &wire.Settings{System: "sé <brief>"}},
		{Seq: 3, Type: wire.EventMessages, RequestID: "m", Time: at, Messages: []wire.Message{{ID: "1", Kind: wire.KindInstruction, Role: wire.RoleUser, CreatedAt: at, Content: map[string]any{"instruction": "☃ & \"x\""}}}, Result: json.RawMessage(`{"value":1}`)},
		{Seq: 7, Type: wire.EventCleared, RequestID: "k", Time: at},
		{Seq: 8, Type: wire.EventUpdated, RequestID: "u", Time: at, Settings: &wire.Settings{Notes: map[string]any{"n": 1}}},
		{Seq: 9, Type: wire.EventForked, RequestID: "f", Time: at, Fork: &wire.ForkPoint{BranchID: "py-fork", Seq: 8}},
	}
}

// fromCompaction is a history whose start retention dropped: it starts
// at a compaction point and holds another.
func fromCompaction() []wire.Event {
	state := func(head uint64) *wire.Compaction {
		return &wire.Compaction{Head: head, Settings: wire.Settings{System: "brief"}, Messages: []wire.Message{{ID: "1", Kind: wire.KindInstruction, Role: wire.RoleUser, CreatedAt: at, Content: map[string]any{"instruction": "hi"}}},
			CreatedAt: at, UpdatedAt: at, Commits: map[string]uint64{"m": head}, DroppedBefore: 3, DroppedEvents: 2, Reason: "keep_events=2"}
	}
	return []wire.Event{
		{Seq: 12, Type: wire.EventCompacted, RequestID: "retention/11", Time: at, Compaction: state(11)},
		{Seq: 13, Type: wire.EventMessages, RequestID: "m2", Time: at, Messages: []wire.Message{{ID: "2", Kind: wire.KindInstruction, Role: wire.RoleUser, CreatedAt: at, Content: map[string]any{"instruction": "again"}}}, Result: json.RawMessage(`{"value":2}`)},
		{Seq: 15, Type: wire.EventCompacted, RequestID: "retention/13", Time: at, Compaction: state(13)},
	}
}

// export writes the history evs with histexport.
func export(t *testing.T, evs []wire.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := histexport.NewWriter(&buf, histexport.Header{BranchID: "py", ExportedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
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
	good := export(t, fromCreation())
	for name, file := range map[string][]byte{"from the creation": good, "from a compaction point": export(t, fromCompaction())} {
		code, out, errOut := verify(t, file)
		if code != 0 {
			t.Fatalf("%s: verify.py rejects a good export: %d %s", name, code, errOut)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		s, err := histexport.Verify(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		if got["head"] != s.Head || got["events"] != float64(s.Events) || got["first_seq"] != float64(s.FirstSeq) || got["last_seq"] != float64(s.LastSeq) || got["lines"] != float64(s.Lines) {
			t.Fatalf("%s: verify.py says %v; histexport %+v", name, got, s)
		}
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
		{"version 1 from a compaction point", v1(t, export(t, fromCompaction()))},
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

// v1 is file rewritten as version 1 of the format, which must start with
// a branch.created: its header says lionbus.history/1, every line hashed
// again.
func v1(t *testing.T, file []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	prev := make([]byte, 32)
	for _, l := range strings.SplitAfter(strings.TrimSuffix(string(file), "\n"), "\n") {
		l = strings.TrimSuffix(l, "\n")
		canon := "{" + l[79:]
		canon = strings.Replace(canon, histexport.Format, histexport.FormatV1, 1)
		sum := sha256.Sum256(append(append([]byte{}, prev...), canon...))
		prev = sum[:]
		out.WriteString(`{"lionhash":"` + hex.EncodeToString(sum[:]) + `",` + canon[1:] + "\n")
	}
	return out.Bytes()
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
