package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// startWorker starts an embedded server and a worker serving prefix on it,
// as cmd/worker does, and returns the server's URL. Everything stops when
// the test ends.
func startWorker(t *testing.T, prefixes ...string) string {
	t.Helper()
	b := bustest.New(t, provision.Config{Prefix: prefixes[0]})
	b.StartWorker(t, nil, nil, nil, worker.Config{Name: "test", MaxInFlight: 4})
	for _, prefix := range prefixes[1:] {
		bustest.Provision(t, b.JS, provision.Config{Prefix: prefix}) // provisioned, but nobody serves it
	}
	return b.Srv.ClientURL()
}

// call runs the publisher with args and returns its exit code and output.
func call(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// step is one publisher invocation and what it must print.
type step struct {
	name       string
	stdin      string
	args       []string
	wantCode   int
	wantOut    []string // substrings of stdout
	wantErr    []string // substrings of stderr
	wantOutRE  string   // a regexp stdout must match
	notWantOut string   // a substring stdout must not contain
}

func (s step) check(t *testing.T, code int, stdout, stderr string) {
	t.Helper()
	if code != s.wantCode {
		t.Errorf("%s: exit code = %d, want %d\nstdout: %s\nstderr: %s", s.name, code, s.wantCode, stdout, stderr)
	}
	for _, w := range s.wantOut {
		if !strings.Contains(stdout, w) {
			t.Errorf("%s: stdout lacks %q:\n%s", s.name, w, stdout)
		}
	}
	for _, w := range s.wantErr {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: stderr lacks %q:\n%s", s.name, w, stderr)
		}
	}
	if s.wantOutRE != "" && !regexp.MustCompile(s.wantOutRE).MatchString(stdout) {
		t.Errorf("%s: stdout does not match %s:\n%s", s.name, s.wantOutRE, stdout)
	}
	if s.notWantOut != "" && strings.Contains(stdout, s.notWantOut) {
		t.Errorf("%s: stdout contains %q:\n%s", s.name, s.notWantOut, stdout)
	}
}

func TestPublisher_conversation_end_to_end(t *testing.T) {
	url := startWorker(t, "lion")
	dir := t.TempDir()
	format := filepath.Join(dir, "city.json")
	if err := os.WriteFile(format, []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	scriptedModel := `{"provider":"scripted","replies":["first answer","{\"city\": \"Lyon\"}","not json at all","still not json","nope","no","never"]}`
	n := []string{"--nats", url}
	steps := []step{
		{name: "create", args: append(n, "branch", "create", "--id", "b1", "--system", "Be brief.", "--chat-model", scriptedModel),
			wantOut: []string{"branch b1  (1 messages, history seq 1)", "system     Be brief."}},
		{name: "create again", args: append(n, "branch", "create", "--id", "b1"),
			wantCode: exitFailed, wantErr: []string{"error: branch_exists:"}},
		{name: "communicate text", args: append(n, "communicate", "--branch", "b1", "--instruction", "Say something"),
			wantOut: []string{"first answer\n"}},
		{name: "communicate structured, flags after the branch", args: append(n, "communicate", "b1", "--instruction", "Which city?", "--response-format", format, "--json"),
			wantOut: []string{`"value": {`, `"city": "Lyon"`, `"branch_id": "b1"`}},
		{name: "parse failure", args: append(n, "communicate", "--branch", "b1", "--instruction", "Again?", "--response-format", format),
			wantCode: exitFailed, wantErr: []string{"error: parse_failed:"}},
		{name: "history", args: append(n, "branch", "history", "b1"),
			wantOutRE: `(?s)#1 .*branch\.created.*system +Be brief\..*#2 .*user +Say something.*assistant +first answer`},
		{name: "history page", args: append(n, "branch", "history", "b1", "--limit", "1"),
			wantOut: []string{"branch.created", "(more: --after 1)"}, notWantOut: "#2"},
		{name: "get", args: append(n, "branch", "get", "--branch", "b1"),
			wantOut: []string{"branch b1  (7 messages", "user       Which city?"}},
		{name: "clone", args: append(n, "branch", "clone", "b1", "--id", "b2"),
			wantOut: []string{"branch b2  (7 messages"}},
		{name: "clear", args: append(n, "branch", "clear", "b2"),
			wantOut: []string{"branch b2  (1 messages"}},
		{name: "delete", args: append(n, "branch", "delete", "b2"),
			wantOut: []string{"branch b2 deleted"}},
		{name: "get deleted", args: append(n, "branch", "get", "b2"),
			wantCode: exitFailed, wantErr: []string{"error: branch_not_found:"}},
		{name: "echo override via --data from stdin, binary mode", stdin: `{"instruction": "echo me", "chat_model": "scripted:echo"}`,
			args: append(n, "--binary", "communicate", "--branch", "b1", "--data", "-"), wantOut: []string{"echo me\n"}},
		{name: "send any verb", stdin: `{"instruction": "hi", "chat_model": "scripted:echo"}`,
			args: append(n, "send", "chat", "--branch", "b1", "--data", "-"), wantOut: []string{"hi\n"}},
		{name: "unknown verb", args: append(n, "send", "fly", "--branch", "b1"),
			wantCode: exitFailed, wantErr: []string{"error: unknown_type:"}},
		{name: "schema-invalid data", stdin: `{"instruction": 5}`, args: append(n, "communicate", "--branch", "b1", "--data", "-"),
			wantCode: exitFailed, wantErr: []string{"error: invalid_data:"}},
		{name: "error as JSON", args: append(n, "--json", "branch", "get", "nope"),
			wantCode: exitFailed, wantOut: []string{`"code": "branch_not_found"`}, wantErr: []string{"branch_not_found"}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
	}
}

func TestPublisher_no_wait_then_result(t *testing.T) {
	url := startWorker(t, "lion")
	n := []string{"--nats", url}
	if code, _, stderr := call(t, "", append(n, "branch", "create", "--id", "nw", "--chat-model", "scripted:echo")...); code != exitOK {
		t.Fatalf("create: %d %s", code, stderr)
	}
	code, stdout, stderr := call(t, "", append(n, "--no-wait", "--request-id", "req-1", "communicate", "nw", "--instruction", "later")...)
	if code != exitOK || stdout != "req-1\n" {
		t.Fatalf("--no-wait: code %d stdout %q stderr %q", code, stdout, stderr)
	}
	steps := []step{
		{name: "result --wait", args: append(n, "result", "req-1", "--wait"), wantOut: []string{"later\n"}},
		{name: "result stored", args: append(n, "result", "--json", "req-1"), wantOut: []string{`"value": "later"`}},
		{name: "result unknown", args: append(n, "result", "req-2"), wantCode: exitNoResult, wantErr: []string{"no answer is stored for request req-2"}},
		{name: "result bad id", args: append(n, "result", "a.b"), wantCode: exitUsage, wantErr: []string{`request id "a.b"`}},
		// The same request id again runs once: the stored answer comes back.
		{name: "same id again", args: append(n, "--request-id", "req-1", "communicate", "nw", "--instruction", "other"), wantOut: []string{"later\n"}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
	}
	// Only one exchange was recorded for req-1.
	_, stdout, _ = call(t, "", append(n, "--json", "branch", "get", "nw")...)
	var data struct {
		Value history.Branch `json:"value"`
	}
	if err := json.Unmarshal([]byte(stdout), &data); err != nil {
		t.Fatalf("branch get --json: %v\n%s", err, stdout)
	}
	if got := len(data.Value.Messages); got != 2 {
		t.Errorf("branch has %d messages, want 2 (one exchange, no system message)", got)
	}
}

func TestPublisher_no_answer_exit_codes(t *testing.T) {
	url := startWorker(t, "lion", "idle") // "idle" is provisioned but not served
	steps := []step{
		{name: "unreachable", args: []string{"--nats", "nats://127.0.0.1:1", "--timeout", "1s", "branch", "get", "b"},
			wantCode: exitNoAnswer, wantErr: []string{"cannot connect to NATS at nats://127.0.0.1:1"}},
		{name: "unreachable, credentials in the URL", args: []string{"--nats", "nats://bob:pw-leak-1@127.0.0.1:1,nats://tok-leak-2@127.0.0.1:2", "--timeout", "1s", "branch", "get", "b"},
			wantCode: exitNoAnswer, wantErr: []string{"cannot connect to NATS at nats://bob:xxxxx@127.0.0.1:1,nats://xxxxx@127.0.0.1:2"}},
		{name: "nobody answers", args: []string{"--nats", url, "--prefix", "idle", "--timeout", "1s", "branch", "get", "b"},
			wantCode: exitNoAnswer, wantErr: []string{"no answer to request", "publisher result"}},
		{name: "no such deployment", args: []string{"--nats", url, "--prefix", "ghost", "--timeout", "2s", "branch", "get", "b"},
			wantCode: exitNoAnswer, wantErr: []string{"send branch.get"}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
		if strings.Contains(stdout+stderr, "leak") {
			t.Errorf("%s: a secret is printed:\n%s%s", s.name, stdout, stderr)
		}
	}
}

func TestPublisher_usage_errors(t *testing.T) {
	steps := []step{
		{name: "no command", wantCode: exitUsage, wantErr: []string{"Usage:", "publisher [command]"}},
		{name: "help", args: []string{"help"}, wantCode: exitOK, wantOut: []string{"Exit codes:", "branch create"}},
		{name: "--help", args: []string{"--help"}, wantCode: exitOK, wantOut: []string{"Exit codes:"}},
		{name: "command help", args: []string{"communicate", "--help"}, wantCode: exitOK, wantOut: []string{"Usage:", "publisher communicate [BRANCH]", "--response-format"}},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: exitUsage, wantErr: []string{`unknown command "frobnicate"`}},
		{name: "branch alone", args: []string{"branch"}, wantCode: exitUsage, wantErr: []string{"branch needs a subcommand"}},
		{name: "unknown branch verb", args: []string{"branch", "rename"}, wantCode: exitUsage, wantErr: []string{`unknown command "branch rename"`}},
		{name: "no branch", args: []string{"branch", "get"}, wantCode: exitUsage, wantErr: []string{"which branch?"}},
		{name: "branch twice", args: []string{"branch", "get", "--branch", "a", "b"}, wantCode: exitUsage, wantErr: []string{"branch given twice"}},
		{name: "no instruction", args: []string{"communicate", "b"}, wantCode: exitUsage, wantErr: []string{"communicate needs --instruction"}},
		{name: "bad model ref", args: []string{"communicate", "b", "--instruction", "x", "--chat-model", "gpt"}, wantCode: exitUsage, wantErr: []string{`--chat-model "gpt": want provider:model`}},
		{name: "bad response format", args: []string{"communicate", "b", "--instruction", "x", "--response-format", "{nope"}, wantCode: exitUsage, wantErr: []string{"--response-format: invalid JSON"}},
		{name: "missing data file", args: []string{"communicate", "b", "--data", "/nonexistent/x.json"}, wantCode: exitUsage, wantErr: []string{"--data:"}},
		{name: "data not an object", stdin: `[1]`, args: []string{"communicate", "b", "--data", "-"}, wantCode: exitUsage, wantErr: []string{"--data: want a JSON object"}},
		{name: "bad request id", args: []string{"--request-id", "a b", "branch", "get", "b"}, wantCode: exitUsage, wantErr: []string{`--request-id "a b"`}},
		{name: "bad prefix", args: []string{"--prefix", "x.y", "branch", "get", "b"}, wantCode: exitUsage, wantErr: []string{`--prefix "x.y"`}},
		{name: "bad timeout", args: []string{"--timeout", "0s", "branch", "get", "b"}, wantCode: exitUsage, wantErr: []string{"--timeout must be positive"}},
		{name: "send without verb", args: []string{"send"}, wantCode: exitUsage, wantErr: []string{"send needs exactly one argument"}},
		{name: "lndl is dispatched", stdin: `{"type":"object","properties":{"a":{"type":"string"}}}`, args: []string{"lndl", "render"},
			wantCode: exitOK, wantOut: []string{`"specs": "Specs: a(str)"`}},
		{name: "lndl usage error", args: []string{"lndl", "bogus"}, wantCode: exitUsage, wantErr: []string{`unknown stage "bogus"`}},
		{name: "bad verb", args: []string{"send", "a..b"}, wantCode: exitUsage, wantErr: []string{`verb "a..b"`}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
	}
}

func TestGlobalFromEnv(t *testing.T) {
	env := map[string]string{"LIONBUS_PREFIX": "envp", "LIONBUS_BRANCH": "ignored", "LIONBUS_TIMEOUT": "5s", "LIONBUS_TOKEN_FILE": "/run/secrets/tok"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		args        []string
		wantPrefix  string
		wantTimeout time.Duration
	}{
		{nil, "envp", 5 * time.Second},
		{[]string{"--prefix", "flagp"}, "flagp", 5 * time.Second},
		{[]string{"--timeout", "7s"}, "envp", 7 * time.Second},
	}
	for _, tc := range tests {
		o := newOptions()
		fs := newTestFlagSet(o)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		given := map[string]bool{}
		fs.Visit(func(f *flagT) { given[f.Name] = true })
		if err := globalFromEnv(fs, given, envFlags, lookup); err != nil {
			t.Fatal(err)
		}
		if o.Prefix != tc.wantPrefix || o.Timeout != tc.wantTimeout || o.Branch != "" || o.TokenFile != "/run/secrets/tok" {
			t.Errorf("args %v: prefix %q timeout %s branch %q token file %q", tc.args, o.Prefix, o.Timeout, o.Branch, o.TokenFile)
		}
	}
}

func TestPublisher_cancel_publishes_on_the_cancel_subject(t *testing.T) {
	srv := bustest.NewServer(t)
	nc, _ := bustest.Connect(t, srv)
	sub, err := nc.SubscribeSync("lion.cancel.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	steps := []step{
		{name: "cancel", args: []string{"--nats", srv.ClientURL(), "cancel", "req-9"}, wantOut: []string{"cancel sent for request req-9"}},
		{name: "cancel without id", args: []string{"cancel"}, wantCode: exitUsage, wantErr: []string{"cancel needs exactly one argument"}},
		{name: "cancel bad id", args: []string{"cancel", "a>b"}, wantCode: exitUsage, wantErr: []string{`request id "a>b"`}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatalf("no cancel message: %v", err)
	}
	if m.Subject != "lion.cancel.req-9" {
		t.Errorf("cancel on %q, want lion.cancel.req-9", m.Subject)
	}
}
