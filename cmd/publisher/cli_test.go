package main

import (
	"strings"
	"testing"
)

func TestPublisher_command_line(t *testing.T) {
	ownFlags := []string{"--id string", "--system string", "--chat-model", "--tool"}
	steps := []step{
		{name: "help on stdout", args: []string{"--help"}, wantOut: []string{"Usage:", "Exit codes:", "Additional Commands:", "completion", "version"}},
		{name: "-h", args: []string{"-h"}, wantOut: []string{"Exit codes:"}},
		{name: "help command", args: []string{"help"}, wantOut: []string{"Requests:", "Administration:", "watch"}},
		{name: "help branch create", args: []string{"help", "branch", "create"},
			wantOut: append([]string{"publisher branch create [flags]", "Global Flags:", "--nats string"}, ownFlags...), notWantOut: "--instruction"},
		{name: "branch create --help", args: []string{"branch", "create", "--help"},
			wantOut: append([]string{"publisher branch create [flags]", "Global Flags:"}, ownFlags...), notWantOut: "--instruction"},
		{name: "communicate --help has its own flags", args: []string{"communicate", "--help"},
			wantOut: []string{"--instruction", "--skip-validation"}, notWantOut: "--system"},
		{name: "watch --help", args: []string{"watch", "--help"}, wantOut: []string{"publisher watch BRANCH", "--all", "--since duration"}},
		{name: "dlq list --help", args: []string{"dlq", "list", "--help"}, wantOut: []string{"--limit int", "-o, --output string"}},
		{name: "tools call --help", args: []string{"tools", "call", "--help"}, wantOut: []string{"--args string", "--key string"}},
		{name: "unknown flag", args: []string{"branch", "get", "b", "--nat", "x"},
			wantCode: exitUsage, wantErr: []string{"unknown flag: --nat (did you mean --nats?)"}},
		{name: "unknown command flag", args: []string{"communicate", "b", "--instructoin", "x"},
			wantCode: exitUsage, wantErr: []string{"unknown flag: --instructoin (did you mean --instruction?)"}},
		{name: "one dash, as Go's flag package took it", args: []string{"-nats", "x", "branch", "get", "b"},
			wantCode: exitUsage, wantErr: []string{"did you mean --nats?"}},
		{name: "unknown command", args: []string{"comunicate"},
			wantCode: exitUsage, wantErr: []string{`unknown command "comunicate" (did you mean "communicate"?)`}},
		{name: "unknown branch command", args: []string{"branch", "lst"},
			wantCode: exitUsage, wantErr: []string{`unknown command "branch lst" (did you mean "branch list"?)`}},
		{name: "bad -o", args: []string{"branch", "list", "-o", "yaml"}, wantCode: exitUsage, wantErr: []string{`-o "yaml": want table or json`}},
		{name: "lndl after global flags", stdin: `{"type":"object","properties":{"a":{"type":"string"}}}`,
			args: []string{"--timeout", "5s", "--json", "lndl", "render"}, wantOut: []string{`"specs": "Specs: a(str)"`}},
		{name: "lndl --help", args: []string{"lndl", "--help"}, wantOut: []string{"Usage: publisher lndl"}},
		{name: "help of an unknown command", args: []string{"help", "branch", "craete"},
			wantCode: exitUsage, wantErr: []string{`no help for "branch craete": no such command (did you mean "branch create"?)`}},
		{name: "--version", args: []string{"--version"}, wantOutRE: `^publisher version \S+`},
		{name: "version", args: []string{"version"}, wantOutRE: `^publisher version \S+`},
		{name: "completion bash", args: []string{"completion", "bash"}, wantOut: []string{"bash completion", "__start_publisher"}},
		{name: "completion zsh", args: []string{"completion", "zsh"}, wantOut: []string{"#compdef publisher"}},
		{name: "completion fish", args: []string{"completion", "fish"}, wantOut: []string{"complete -c publisher"}},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
		if code == exitUsage && strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: the error is not one line:\n%s", s.name, stderr)
		}
	}
}

func TestPublisher_version_from_ldflags(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "v9.8.7"
	code, stdout, stderr := call(t, "", "version")
	step{name: "version", wantOut: []string{"publisher version v9.8.7\n"}}.check(t, code, stdout, stderr)
}

func TestPublisher_warns_of_misspelled_environment_variables(t *testing.T) {
	defer func(e func() []string) { environ = e }(environ)
	environ = func() []string {
		return []string{"LIONBUS_NAT=nats://x", "LIONBUS_PREFIX=lion", "HOME=/root", "LIONBUS_CONCURRENCY=8", "LIONBUS_NATS_CONTEXT=prod"}
	}
	code, stdout, stderr := call(t, "", "version")
	step{name: "misspelled", wantOut: []string{"publisher version"},
		wantErr: []string{"publisher: warning: environment variable LIONBUS_NAT is ignored", "did you mean LIONBUS_NATS?"}}.check(t, code, stdout, stderr)
	if strings.Contains(stderr, "LIONBUS_PREFIX") || strings.Contains(stderr, "LIONBUS_CONCURRENCY") || strings.Contains(stderr, "LIONBUS_NATS_CONTEXT") {
		t.Errorf("a variable that is read, or the worker's, is reported:\n%s", stderr)
	}
}

func TestPublisher_output_json_for_tables(t *testing.T) {
	url := startWorker(t, "lion")
	n := []string{"--nats", url}
	if code, _, stderr := call(t, "", append(n, "branch", "create", "--id", "oj", "--chat-model", "scripted:echo")...); code != exitOK {
		t.Fatalf("create: %d %s", code, stderr)
	}
	steps := []step{
		{name: "branch list -o json", args: append(n, "branch", "list", "-o", "json"), wantOut: []string{`"branch_id": "oj"`}},
		{name: "branch list --output table", args: append(n, "branch", "list", "--output", "table"), wantOutRE: `oj\s+\d+ events`},
		{name: "-o table and --json", args: append(n, "--json", "branch", "list", "-o", "table"), wantCode: exitUsage, wantErr: []string{"exclude each other"}},
		{name: "tools list -o json", args: append(n, "tools", "list", "-o", "json"), wantOutRE: `^\[`},
		{name: "dlq list -o json", args: append(n, "dlq", "list", "-o", "json"), wantOutRE: `^\[`},
	}
	for _, s := range steps {
		code, stdout, stderr := call(t, s.stdin, s.args...)
		s.check(t, code, stdout, stderr)
	}
}
