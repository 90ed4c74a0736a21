// The LNDL middle with a CLI model: the inner calls go through
// run_and_collect and the CLI provider (pkg/ops/provider/cli).

package bus_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
)

// scriptedCLI writes a fake coding-agent CLI into a temporary directory:
// its N-th run (from 0) prints replies[N] as Claude Code stream-json, an
// empty reply as a session with no assistant text. It returns the
// command.
func scriptedCLI(t *testing.T, replies ...string) string {
	t.Helper()
	dir := t.TempDir()
	for i, r := range replies {
		lines := []any{map[string]any{"type": "system", "subtype": "init", "session_id": "S1"}}
		if r != "" {
			lines = append(lines, map[string]any{"type": "assistant", "session_id": "S1", "message": map[string]any{
				"id": fmt.Sprint("m", i), "type": "message", "role": "assistant",
				"content": []any{map[string]any{"type": "text", "text": r}}}})
		}
		lines = append(lines, map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": "S1", "result": r})
		var b strings.Builder
		for _, l := range lines {
			j, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(j)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint("call", i, ".jsonl")), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(dir, "cli.sh")
	body := "#!/bin/sh\nd=$(dirname \"$0\")\nn=$(cat \"$d/count\" 2>/dev/null || echo 0)\necho $((n+1)) > \"$d/count\"\ncat \"$d/call$n.jsonl\"\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return script
}

// Acceptance: the CLI-model path runs the two-round scenario through
// run_and_collect (0024-D2-08); a run with no assistant text is a
// continue round, as an API model's empty reply is (0024-D3-02).
func TestAcceptance_operate_lndl_cli_model(t *testing.T) {
	t.Parallel()
	lacts := lndlReply("<lact s>add(x=1, y=2)</lact>\n<lact u>upper(s=\"hi\")</lact>")
	out := lndlReply("OUT{total: [s], shout: [u]}")
	tests := []struct {
		name    string
		replies []string
		stages  string
	}{
		// Each round's instruction is stored before its stream, in its own
		// stage event (0021-D3-13).
		{name: "two rounds", replies: []string{lacts, out}, stages: "/middle/round1/instruction: instruction\n" +
			"/middle/round1: assistant_response\n" +
			"/middle/round1/act: action_request action_response action_request action_response\n" +
			"/middle/round2/instruction: instruction\n" +
			"/middle/round2: assistant_response"},
		{name: "no text first", replies: []string{"", lacts, out}, stages: "/middle/round1/instruction: instruction\n" +
			"/middle/round1: \n" +
			"/middle/round2/instruction: instruction\n" +
			"/middle/round2: assistant_response\n" +
			"/middle/round2/act: action_request action_response action_request action_response\n" +
			"/middle/round3/instruction: instruction\n" +
			"/middle/round3: assistant_response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			prov, err := cli.New(cli.Command{Name: "lndl", Argv: []string{scriptedCLI(t, tt.replies...)}})
			if err != nil {
				t.Fatal(err)
			}
			b := bustest.New(t, provision.Config{})
			tools, svc := lndlToolService(t, b)
			startToolWorkerWith(t, b, tools, bustest.Providers(t, map[string]ops.Provider{cli.Name: prov}))
			bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{
				"branch_id": "ln", "tools": []string{"add", "upper"}, "chat_model": "cli:lndl"}), nil)
			got, res, reqID := lndlOperate(t, b, "ln", nil)
			validateValue(t, reportSchema, any(got))
			if s, _ := json.Marshal(got); string(s) != `{"shout":"HI","total":3}` {
				t.Fatalf("value %s", s)
			}
			if svc.seen("add") != 1 || svc.seen("upper") != 1 || len(opstest.LNDLRounds(t, res)) != len(tt.replies) {
				t.Fatalf("tool calls add %d, upper %d; rounds %+v", svc.seen("add"), svc.seen("upper"), opstest.LNDLRounds(t, res))
			}
			var stages []string
			for _, ev := range b.History(t, "ln")[1:] {
				var k []string
				for _, m := range ev.Messages {
					k = append(k, string(m.Kind))
				}
				stages = append(stages, strings.TrimPrefix(ev.RequestID, reqID)+": "+strings.Join(k, " "))
			}
			if strings.Join(stages, "\n") != tt.stages {
				t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(stages, "\n"), tt.stages)
			}
		})
	}
}
