package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain keeps the tests away from the user's saved contexts.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "publisher-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	os.Unsetenv("LIONBUS_NATS_CONTEXT")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestPublisher_contexts(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	url := startWorker(t, "lion")
	creds := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(creds, []byte("unused"), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []step{
		{name: "none yet", args: []string{"context", "ls"}, wantOut: []string{"no contexts"}},
		{name: "save", args: []string{"context", "save", "local", "--nats", url, "--prefix", "lion"},
			wantOut: []string{"context local saved in " + filepath.Join(config, "lionbus", "contexts", "local.json")}},
		{name: "save another", args: []string{"context", "save", "nowhere", "--nats", "nats://127.0.0.1:1", "--timeout", "1s"}},
		{name: "a password is refused", args: []string{"context", "save", "leaky", "--nats", url, "--user", "u", "--password", "pw"},
			wantCode: exitUsage, wantErr: []string{"does not store secrets", "--password-file"}},
		{name: "a token in the URL is refused", args: []string{"context", "save", "leaky", "--nats", "nats://tok@127.0.0.1:4222"},
			wantCode: exitUsage, wantErr: []string{"does not store secrets"}},
		{name: "a password file is kept", args: []string{"context", "save", "withfile", "--nats", url, "--user", "u", "--password-file", creds}},
		{name: "nothing to save", args: []string{"context", "save", "empty"}, wantCode: exitUsage, wantErr: []string{"give the settings to save"}},
		{name: "bad name", args: []string{"context", "save", "../x", "--nats", url}, wantCode: exitUsage, wantErr: []string{`context name "../x"`}},
		{name: "select unknown", args: []string{"context", "select", "ghost"}, wantCode: exitUsage, wantErr: []string{`no context "ghost"`}},
		{name: "select", args: []string{"context", "select", "local"}, wantOut: []string{"context local selected"}},
		{name: "ls", args: []string{"context", "ls"}, wantOutRE: `(?m)^\* local +nats://` + `[^\n]*\n  nowhere +nats://127\.0\.0\.1:1\n  withfile`},
		{name: "ls -o json", args: []string{"context", "ls", "-o", "json"}, wantOut: []string{`"name": "local",` + "\n    \"selected\": true"}},
		{name: "show", args: []string{"context", "show"}, wantOut: []string{`"name": "local"`, `"nats": "` + url + `"`}},
		{name: "show a file setting", args: []string{"context", "show", "withfile"}, wantOut: []string{`"password-file": "` + creds + `"`}, notWantOut: "unused"},
		{name: "a request through the selected context", args: []string{"branch", "create", "--id", "c1", "--chat-model", "scripted:echo"},
			wantOut: []string{"branch c1"}},
		{name: "a flag wins over the context", args: []string{"--nats", "nats://127.0.0.1:1", "--timeout", "1s", "branch", "get", "c1"},
			wantCode: exitNoAnswer, wantErr: []string{"cannot connect to NATS at nats://127.0.0.1:1"}},
		{name: "--nats-context for one command", args: []string{"--nats-context", "nowhere", "branch", "get", "c1"},
			wantCode: exitNoAnswer, wantErr: []string{"cannot connect to NATS at nats://127.0.0.1:1"}},
		{name: "--nats-context unknown", args: []string{"--nats-context", "ghost", "branch", "get", "c1"},
			wantCode: exitUsage, wantErr: []string{`no context "ghost"`}},
		{name: "still the selected one", args: []string{"communicate", "c1", "--instruction", "hello"}, wantOut: []string{"hello\n"}},
		{name: "completion of a context name", args: []string{"__complete", "context", "select", ""}, wantOutRE: `(?s)^local\nnowhere\nwithfile\n:4\n`},
		{name: "completion of --nats-context", args: []string{"__complete", "--nats-context", "n"}, wantOut: []string{"nowhere\n"}},
		{name: "rm", args: []string{"context", "rm", "local"}, wantOut: []string{"context local removed"}},
		{name: "none selected after rm", args: []string{"context", "show"}, wantCode: exitUsage, wantErr: []string{"no context is selected"}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(config, "lionbus", "contexts", "withfile.json")); err != nil || strings.Contains(string(b), "unused") {
		t.Errorf("withfile.json: %s %v", b, err)
	}
}

func TestPublisher_context_under_environment(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	url := startWorker(t, "lion")
	for _, args := range [][]string{
		{"context", "save", "bad", "--nats", "nats://127.0.0.1:1", "--timeout", "1s"},
		{"context", "save", "good", "--nats", url},
		{"context", "select", "bad"},
	} {
		if code, _, stderr := call(t, "", args...); code != exitOK {
			t.Fatalf("%v: %d %s", args, code, stderr)
		}
	}
	// The environment wins over the selected context: LIONBUS_NATS, or
	// LIONBUS_NATS_CONTEXT naming another context.
	t.Setenv("LIONBUS_NATS", url)
	code, stdout, stderr := call(t, "", "branch", "create", "--id", "e1")
	step{name: "LIONBUS_NATS", wantOut: []string{"branch e1"}}.check(t, code, stdout, stderr)
	os.Unsetenv("LIONBUS_NATS")
	t.Setenv("LIONBUS_NATS_CONTEXT", "good")
	code, stdout, stderr = call(t, "", "branch", "get", "e1")
	step{name: "LIONBUS_NATS_CONTEXT", wantOut: []string{"branch e1"}}.check(t, code, stdout, stderr)
}
