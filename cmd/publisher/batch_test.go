package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/wire"
)

// The batch commands end to end against a worker: submit a file (the same
// file again gives the same id and submits nothing), watch it in plain
// lines to its end, get, results as JSONL, retry, list, and a bad file
// refused with its line.
func TestPublisher_batch_commands(t *testing.T) {
	t.Parallel()
	url := startWorker(t, "lion")
	var lines []string
	for i := range 20 {
		model := `"scripted:echo"`
		if i%10 == 3 {
			model = `{"provider": "scripted", "replies": [{"error": "no"}]}`
		}
		lines = append(lines, fmt.Sprintf(`{"custom_id": "doc-%d", "verb": "communicate", "data": {"instruction": "text %d", "chat_model": %s}}`, i, i, model))
	}
	file := filepath.Join(t.TempDir(), "items.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := call(t, "", "batch", "submit", file, "--concurrency", "4", "--nats", url)
	if code != exitOK {
		t.Fatalf("submit: %d %s %s", code, out, errOut)
	}
	id := strings.Fields(out)[0]
	if !wire.ValidBatchID(id) || !strings.Contains(out, "20 items") {
		t.Fatalf("submit printed %q", out)
	}
	code, again, _ := call(t, "", "batch", "submit", file, "--concurrency", "4", "--nats", url)
	if code != exitOK || strings.Fields(again)[0] != id {
		t.Fatalf("submitting again printed %q, want the id %s", again, id)
	}
	steps := []step{
		{name: "watch", args: []string{"batch", "watch", id, "--nats", url},
			wantOut: []string{id + " completed: 20/20 done: 18 succeeded, 2 failed, 0 canceled, 0 expired; 0 running, 0 queued"}},
		{name: "get", args: []string{"batch", "get", id, "--nats", url}, wantOut: []string{`"state":"completed"`, `"succeeded":18`}},
		{name: "list", args: []string{"batch", "list", "--nats", url}, wantOut: []string{id + "\tcompleted\tround 1\t20/20 done"}},
		{name: "cancel ended", args: []string{"batch", "cancel", id, "--nats", url}, wantOut: []string{`"state":"completed"`}},
		{name: "retry", args: []string{"batch", "retry", id, "--nats", url}, wantOut: []string{`"round":2`, `"state":"running"`}},
		{name: "watch retry", args: []string{"batch", "watch", id, "--nats", url}, wantOut: []string{"completed: 20/20 done: 18 succeeded, 2 failed"}},
		{name: "max-cost", args: []string{"batch", "max-cost", id, "0.25", "--nats", url}, wantOut: []string{`"max_cost_usd":0.25`, `"state":"completed"`}},
		{name: "max-cost shown", args: []string{"batch", "list", "--nats", url}, wantOut: []string{"(ceiling $0.250000)"}},
		{name: "max-cost negative", args: []string{"batch", "max-cost", "--nats", url, "--", id, "-1"}, wantCode: exitUsage, wantErr: []string{"max cost -1"}},
		{name: "max-cost not a number", args: []string{"batch", "max-cost", id, "lots", "--nats", url}, wantCode: exitUsage, wantErr: []string{`"lots" is not a number`}},
		{name: "max-cost unknown", args: []string{"batch", "max-cost", "nope", "1", "--nats", url}, wantCode: exitFailed, wantErr: []string{"no such batch"}},
		{name: "unknown", args: []string{"batch", "get", "nope", "--nats", url}, wantCode: exitFailed, wantErr: []string{"no such batch"}},
		{name: "bad id", args: []string{"batch", "get", "a.b", "--nats", url}, wantCode: exitUsage, wantErr: []string{"batch id"}},
		{name: "bad line", stdin: lines[0] + "\n{\"custom_id\": 1}\n", args: []string{"batch", "submit", "-", "--nats", url}, wantCode: exitUsage, wantErr: []string{"line 2"}},
		{name: "bad subcommand", args: []string{"batch", "purge", "--nats", url}, wantCode: exitUsage, wantErr: []string{"unknown batch subcommand"}},
	}
	for _, s := range steps {
		code, out, errOut := call(t, s.stdin, s.args...)
		s.check(t, code, out, errOut)
	}
	code, out, errOut = call(t, "", "batch", "results", id, "--seq", "--nats", url)
	if code != exitOK {
		t.Fatalf("results: %d %s", code, errOut)
	}
	seen := map[string]bool{}
	failed := 0
	for line := range strings.Lines(out) {
		var r struct {
			wire.BatchResult
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("result line %q: %v", line, err)
		}
		if seen[r.CustomID] || r.Seq == 0 {
			t.Fatalf("result %q: repeated or without seq", line)
		}
		seen[r.CustomID] = true
		if r.Status == wire.ItemFailed {
			failed++
			if r.Error.Code != string(wire.CodeProvider) || r.Round != 2 {
				t.Fatalf("failed result %q", line)
			}
		}
	}
	if len(seen) != 20 || failed != 2 {
		t.Fatalf("%d results, %d failed; want 20 and 2:\n%s", len(seen), failed, out)
	}
}
