package main

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestCommands_request_data: the data a command line sends, built from the
// verb's wire type and merged over --data, is exactly the JSON below (the
// publisher's requests before they were built from package wire were the
// same bytes). A flag given replaces the --data key; a key of --data no
// flag sets stays.
func TestCommands_request_data(t *testing.T) {
	tests := []struct {
		cmd     string
		args    []string
		data    string // --data, "" for none
		want    string // the request data, as encoding/json writes it
		wantErr string
	}{
		{"branch create", []string{"--id", "b1", "--system", "s", "--chat-model", "scripted:echo", "--parse-model", `{"provider":"scripted","replies":["a",{"text":"b","usage":{"input_tokens":3}}]}`, "--tool", "t1", "--tool", "t2"}, "", `{"branch_id":"b1","chat_model":"scripted:echo","parse_model":{"provider":"scripted","replies":["a",{"text":"b","usage":{"input_tokens":3}}]},"system":"s","tools":["t1","t2"]}`, ""},
		{"branch create", []string{}, `{"branch_id":"x","metadata":{"k":1}}`, `{"branch_id":"x","metadata":{"k":1}}`, ""},
		{"branch history", []string{"--after", "3", "--limit", "7", "b1"}, "", `{"after":3,"limit":7}`, ""},
		{"branch history", []string{"b1"}, "", `{}`, ""},
		{"branch history", []string{"--at-seq", "12", "b1"}, "", `{"at_seq":12}`, ""},
		{"branch history", []string{"--at-time", "2026-01-02T15:04:05.5Z", "b1"}, "", `{"at_time":"2026-01-02T15:04:05.5Z"}`, ""},
		{"branch get", []string{"b1"}, "", `{}`, ""},
		{"branch get", []string{"--at-seq", "118", "b1"}, "", `{"at_seq":118}`, ""},
		{"branch get", []string{"--at-time", "2026-01-02T15:04:05+02:00", "b1"}, "", `{"at_time":"2026-01-02T15:04:05+02:00"}`, ""},
		{"branch get", []string{"--at-seq", "3", "--at-time", "2026-01-02T15:04:05Z", "b1"}, "", `{}`, "--at-seq and --at-time exclude each other"},
		{"branch get", []string{"--at-time", "yesterday", "b1"}, "", `{}`, `--at-time "yesterday": want an RFC 3339 time such as 2026-01-02T15:04:05Z`},
		{"branch clone", []string{"--id", "c", "b1"}, "", `{"branch_id":"c"}`, ""},
		{"branch clone", []string{"b1"}, "", `{}`, ""},
		{"communicate", []string{"--instruction", "hi", "--guidance", "g", "--context", `[1,{"a":2}]`, "--response-format", `{"type":"object","properties":{"n":{"type":"integer","maximum":1e3}}}`, "--chat-model", "openai:gpt-4.1-mini", "--skip-validation", "--clear-messages", "b1"}, "", `{"chat_model":"openai:gpt-4.1-mini","clear_messages":true,"context":[1,{"a":2}],"guidance":"g","instruction":"hi","response_format":{"properties":{"n":{"maximum":1000,"type":"integer"}},"type":"object"},"skip_validation":true}`, ""},
		{"communicate", []string{"--context", "plain text", "b1"}, `{"instruction":{"task":"x"},"num_parse_retries":2,"extra":true}`, `{"context":"plain text","extra":true,"instruction":{"task":"x"},"num_parse_retries":2}`, ""},
		{"communicate", []string{"--instruction", "over", "b1"}, `{"instruction":"under","plain_content":"p"}`, `{"instruction":"over","plain_content":"p"}`, ""},
		{"operate", []string{"--instruction", "i", "--reason", "--actions", "--action-strategy", "sequential", "--tool", "a", "--handle-validation", "raise", "--skip-validation", "--no-invoke-actions", "--clear-messages", "--middle", "lndl", "--round-budget", "0", "b1"}, "", `{"action_strategy":"sequential","actions":true,"clear_messages":true,"handle_validation":"raise","instruction":"i","invoke_actions":false,"middle":"lndl","reason":true,"round_budget":0,"skip_validation":true,"tools":["a"]}`, ""},
		{"operate", []string{"--instruction", "i", "b1"}, "", `{"instruction":"i"}`, ""},
		{"operate", []string{"--round-budget", "4", "b1"}, `{"instruct":{"instruction":"x","reason":true}}`, `{"instruct":{"instruction":"x","reason":true},"round_budget":4}`, ""},
		{"run", []string{"--chat-model", "cli:fake", "--stream-persist-dir", "d1", "--clear-messages", "b1", "do it"}, "", `{}`, "run takes one argument: the instruction (quote it)"},
		{"run", []string{"--stream-persist", "do it"}, "", `{"instruction":"do it","stream_persist":true}`, "run needs --branch"},
		{"react", []string{"--instruction", "r", "--response-format", `{"type":"object"}`, "b1"}, "", `{"instruction":"r","response_format":{"type":"object"}}`, ""},
		{"react", []string{"--instruction", "r", "--chat-model", "scripted:echo", "--analysis-model", "a:b", "--interpret-model", `{"provider":"x","k":[1,2]}`, "--tool", "t", "--action-strategy", "sequential", "--handle-validation", "raise", "--interpret", "--interpret-domain", "d", "--interpret-style", "s", "--interpret-sample", "p", "--no-extensions", "--max-extensions", "0", "--return-analysis", "--stream", "b1"}, "", `{"action_strategy":"sequential","analysis_model":"a:b","chat_model":"scripted:echo","extension_allowed":false,"handle_validation":"raise","instruction":"r","interpret":true,"interpret_domain":"d","interpret_model":{"k":[1,2],"provider":"x"},"interpret_sample":"p","interpret_style":"s","max_extensions":0,"return_analysis":true,"stream":true,"tools":["t"]}`, ""},
		{"react", []string{"--max-extensions", "7", "b1"}, `{"instruct":{"instruction":"x"},"tools":["z"],"stream":false}`, `{"instruct":{"instruction":"x"},"max_extensions":7,"stream":false,"tools":["z"]}`, ""},
		{"parse", []string{"--text", "n is 3", "--response-format", `{"type":"object","properties":{"n":{"type":"integer"}}}`, "--parse-model", "scripted:echo", "--no-fuzzy-match", "--similarity-threshold", "0.9", "--handle-validation", "return_none", "--max-retries", "0", "--retry-initial-delay", "0.5", "--retry-backoff", "2", "b1"}, "", `{"fuzzy_match":false,"handle_validation":"return_none","max_retries":0,"parse_model":"scripted:echo","response_format":{"properties":{"n":{"type":"integer"}},"type":"object"},"retry_backoff":2,"retry_initial_delay":0.5,"similarity_threshold":0.9,"text":"n is 3"}`, ""},
		{"parse", []string{"--parse-model", `{"provider":"scripted","replies":["{}"]}`, "b1"}, `{"text":"t","response_format":{"type":"object"},"max_retries":2,"extra":1}`, `{"extra":1,"max_retries":2,"parse_model":{"provider":"scripted","replies":["{}"]},"response_format":{"type":"object"},"text":"t"}`, ""},
		{"parse", []string{"--text", "over", "b1"}, `{"text":"under","response_format":{"type":"object"}}`, `{"response_format":{"type":"object"},"text":"over"}`, ""},
		{"parse", []string{"--response-format", `{"type":"object"}`, "b1"}, "", `{"response_format":{"type":"object"}}`, "parse needs --text or --text-file (or a text in --data)"},
		{"parse", []string{"--text", "t", "b1"}, "", `{"text":"t"}`, "parse needs --response-format (or a response_format in --data)"},
		{"parse", []string{"--text", "t", "--text-file", "f", "b1"}, "", `{}`, "give the text with --text or --text-file, not both"},
		{"interpret", []string{"--text", "cheap flights??", "--domain", "travel", "--style", "formal", "--sample-writing", "Dear", "--interpret-model", "a:b", "--chat-model", `{"provider":"x","k":1}`, "b1"}, "", `{"chat_model":{"k":1,"provider":"x"},"domain":"travel","interpret_model":"a:b","sample_writing":"Dear","style":"formal","text":"cheap flights??"}`, ""},
		{"interpret", []string{"--domain", "d", "b1"}, `{"text":"t","extra":true}`, `{"domain":"d","extra":true,"text":"t"}`, ""},
		{"interpret", []string{"--domain", "d", "b1"}, "", `{"domain":"d"}`, "interpret needs --text (or a text in --data)"},
		{"act", []string{"--call", "add={\"x\": 1, \"y\": 2.5}", "--call", "now", "--strategy", "sequential", "--suppress-errors=false", "b1"}, "", `{"action_requests":[{"arguments":{"x":1,"y":2.5},"function":"add"},{"function":"now"}],"strategy":"sequential","suppress_errors":false}`, ""},
		{"act", []string{"--requests", `[{"function":"a","arguments":{"s":"x"},"id":"r1"}]`, "--call", "b", "b1"}, `{"action_requests":[{"function":"first"}],"extra":2}`, `{"action_requests":[{"function":"first"},{"arguments":{"s":"x"},"function":"a","id":"r1"},{"function":"b"}],"extra":2}`, ""},
		{"act", []string{"b1"}, "", `{}`, "act needs a call: --call NAME[=ARGS], --requests, or action_requests in --data"},
		{"act", []string{"--call", "add=[1]", "b1"}, "", `{}`, "--call add: arguments must be a JSON object, e.g. add='{\"x\": 1}'"},
		{"act", []string{"--requests", `{"function":"a"}`, "b1"}, "", `{}`, "--requests: want a JSON array of {function, arguments}"},
		{"react", []string{"--analysis-model", "bad", "b1"}, `{"instruction":"x"}`, `{"instruction":"x"}`, "--analysis-model \"bad\": want provider:model (e.g. scripted:echo) or a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			var cmd *command
			for i := range commands {
				if commands[i].name == tt.cmd {
					cmd = &commands[i]
				}
			}
			if cmd == nil {
				t.Fatalf("no command %q", tt.cmd)
			}
			fs := flag.NewFlagSet(tt.cmd, flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			apply := cmd.define(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			req := &request{data: map[string]any{}}
			if tt.data != "" {
				path := filepath.Join(t.TempDir(), "data.json")
				if err := os.WriteFile(path, []byte(tt.data), 0o600); err != nil {
					t.Fatal(err)
				}
				var err error
				if req.data, err = readData(path, nil); err != nil {
					t.Fatal(err)
				}
			}
			err := apply(req, fs.Args())
			switch {
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			}
			got, err := json.Marshal(req.data)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("%v sends\n%s\nwant\n%s", tt.args, got, tt.want)
			}
		})
	}
}
