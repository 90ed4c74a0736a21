package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestPublisher_branch_fork_forks_edit: branch fork at a sequence and
// before a message, branch forks listing both, branch edit sending an
// edited instruction on a new fork, and the usage errors.
func TestPublisher_branch_fork_forks_edit(t *testing.T) {
	url := startWorker(t, "lion")
	for _, args := range [][]string{
		{"branch", "create", "--id", "p1", "--system", "be brief", "--chat-model", "scripted:echo"},
		{"communicate", "--branch", "p1", "--instruction", "one"},
		{"communicate", "--branch", "p1", "--instruction", "two"},
	} {
		if code, _, errOut := call(t, "", append([]string{"--nats", url}, args...)...); code != exitOK {
			t.Fatalf("%v: %d %s", args, code, errOut)
		}
	}
	code, out, errOut := call(t, "", "--nats", url, "--json", "branch", "get", "p1")
	if code != exitOK {
		t.Fatalf("branch get: %d %s", code, errOut)
	}
	var got struct {
		Value struct {
			Seq      uint64 `json:"seq"`
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
		} `json:"value"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Value.Messages) != 5 {
		t.Fatalf("branch get: %v %s", err, out)
	}
	second := got.Value.Messages[3].ID // system, one, answer, two, answer
	runStep(t, step{name: "fork at the head", wantOut: []string{"branch f1  (5 messages", "fork of:     p1 at seq"}, args: []string{"--nats", url, "branch", "fork", "p1", "--id", "f1"}})
	runStep(t, step{name: "fork before a message", wantOut: []string{"branch f2  (3 messages", "fork of:     p1"}, args: []string{"--nats", url, "branch", "fork", "p1", "--id", "f2", "--before-message", second}})
	runStep(t, step{name: "forks", wantOut: []string{"f1  at seq", "f2  at seq"}, args: []string{"--nats", url, "branch", "forks", "p1"}})
	runStep(t, step{name: "edit", wantOut: []string{"two, edited"}, wantErr: []string{"fork f3 of branch p1"}, args: []string{"--nats", url, "branch", "edit", "p1", second, "two, edited", "--id", "f3"}})
	runStep(t, step{name: "the edited fork", wantOut: []string{"branch f3  (5 messages", "two, edited"}, args: []string{"--nats", url, "branch", "get", "f3"}})
	runStep(t, step{name: "the branch as it was", wantOut: []string{"branch p1  (5 messages"}, args: []string{"--nats", url, "branch", "get", "p1"}})
	runStep(t, step{name: "both points", wantCode: exitUsage, wantErr: []string{"--at-seq and --before-message exclude each other"}, args: []string{"--nats", url, "branch", "fork", "p1", "--at-seq", "3", "--before-message", second}})
	runStep(t, step{name: "edit needs three", wantCode: exitUsage, wantErr: []string{"branch edit takes a branch id, a message id and the new instruction"}, args: []string{"--nats", url, "branch", "edit", "p1", second}})
	runStep(t, step{name: "edit of an answer", wantCode: exitFailed, wantErr: []string{"invalid_request", "not the first message of an exchange"}, args: []string{"--nats", url, "branch", "edit", "p1", got.Value.Messages[2].ID, "x"}})
}

// TestPublisher_changes: the change feed as JSON lines, in order, from
// the start and after a sequence.
func TestPublisher_changes(t *testing.T) {
	url := startWorker(t, "lion")
	for _, args := range [][]string{
		{"branch", "create", "--id", "c1", "--system", "be brief", "--chat-model", "scripted:echo"},
		{"communicate", "--branch", "c1", "--instruction", "one"},
		{"branch", "clear", "c1"},
		{"branch", "delete", "c1"},
	} {
		if code, _, errOut := call(t, "", append([]string{"--nats", url}, args...)...); code != exitOK {
			t.Fatalf("%v: %d %s", args, code, errOut)
		}
	}
	read := func(args ...string) []map[string]any {
		t.Helper()
		code, out, errOut := call(t, "", append([]string{"--nats", url, "changes"}, args...)...)
		if code != exitOK {
			t.Fatalf("changes %v: %d %s", args, code, errOut)
		}
		var lines []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("changes: line %q: %v", l, err)
			}
			lines = append(lines, m)
		}
		return lines
	}
	all := read()
	var types []string
	for _, c := range all {
		types = append(types, c["type"].(string))
	}
	if want := []string{"lionbus.branch.created", "lionbus.branch.messages", "lionbus.branch.cleared", "lionbus.branch.deleted"}; !slices.Equal(types, want) {
		t.Fatalf("changes: types %v, want %v", types, want)
	}
	rest := read("--after", fmt.Sprint(all[1]["lionseq"]))
	if len(rest) != 2 || rest[0]["id"] != all[2]["id"] {
		t.Fatalf("changes --after: %v", rest)
	}
	runStep(t, step{name: "an argument", wantCode: exitUsage, wantErr: []string{"changes takes no argument"}, args: []string{"--nats", url, "changes", "c1"}})
}
