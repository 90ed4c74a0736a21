package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

func TestRun_command_line(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string // substrings of stdout
		wantErr  string   // a substring of stderr
		oneLine  bool     // the error is one line
	}{
		{name: "help on stdout", args: []string{"--help"}, wantOut: []string{"Usage:", "worker [flags]", "--connect-timeout duration", "--drain-timeout duration", "LIONBUS_<FLAG>"}},
		{name: "-h", args: []string{"-h"}, wantOut: []string{"Usage:"}},
		{name: "help command", args: []string{"help"}, wantOut: []string{"Usage:", "--concurrency int"}},
		{name: "version command", args: []string{"version"}, wantOut: []string{"worker version "}},
		{name: "--version", args: []string{"--version"}, wantOut: []string{"worker version "}},
		{name: "completion bash", args: []string{"completion", "bash"}, wantOut: []string{"bash completion", "__start_worker"}},
		{name: "completion zsh", args: []string{"completion", "zsh"}, wantOut: []string{"#compdef worker"}},
		{name: "completion fish", args: []string{"completion", "fish"}, wantOut: []string{"complete -c worker"}},
		{name: "misspelled flag", args: []string{"--concurency", "3"}, wantCode: exitUsage,
			wantErr: "worker: unknown flag: --concurency (did you mean --concurrency?)", oneLine: true},
		{name: "one dash", args: []string{"-nats", "nats://x"}, wantCode: exitUsage, wantErr: "(did you mean --nats?)", oneLine: true},
		{name: "stray argument", args: []string{"serve"}, wantCode: exitUsage, wantErr: `unexpected argument "serve"`, oneLine: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tc.wantCode, stderr.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tc.wantErr)
			}
			if tc.wantErr == "" && stderr.Len() > 0 {
				t.Errorf("stderr = %q, want nothing", stderr.String())
			}
			if tc.oneLine && strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("error of more than one line: %q", stderr.String())
			}
		})
	}
}

func TestRun_version_from_ldflags(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "v1.2.3"
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, &stdout, &stderr); code != exitOK || stdout.String() != "worker version v1.2.3\n" {
		t.Errorf("code %d stdout %q stderr %q", code, stdout.String(), stderr.String())
	}
}

func TestRun_warns_of_misspelled_environment_variables(t *testing.T) {
	defer func(e func() []string) { environ = e }(environ)
	environ = func() []string {
		return []string{"LIONBUS_CONCURENCY=4", "LIONBUS_DRAIN_TIMEOUT=5s", "LIONBUS_OPENAI_API_KEY=k", "OPENAI_API_KEY=k",
			"LIONBUS_NATS_CONTEXT=prod"}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("code %d stderr %q", code, stderr.String())
	}
	want := regexp.MustCompile(`(?m)^worker: warning: environment variable LIONBUS_CONCURENCY is ignored.*\(did you mean LIONBUS_CONCURRENCY\?\)$`)
	if !want.MatchString(stderr.String()) {
		t.Errorf("stderr = %q, want a warning matching %s", stderr.String(), want)
	}
	if n := strings.Count(stderr.String(), "warning"); n != 1 {
		t.Errorf("%d warnings, want 1 (neither the variables read nor the publisher's are reported):\n%s", n, stderr.String())
	}
}
