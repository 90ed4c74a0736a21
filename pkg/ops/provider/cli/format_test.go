package cli_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
)

func TestDetectFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		want cli.Format
	}{
		{[]string{"claude", "--model", "sonnet"}, cli.FormatClaude},
		{[]string{"/opt/clis/node_modules/.bin/codex", "exec", "--json"}, cli.FormatCodex},
		{[]string{"/usr/lib/node_modules/@openai/codex/bin/codex.js", "exec"}, cli.FormatCodex},
		{[]string{"gemini", "-m", "gemini-2.5-flash"}, cli.FormatGemini},
		{[]string{"./my-agent"}, cli.FormatClaude},
		{nil, cli.FormatClaude},
	}
	for _, tt := range tests {
		if got := cli.DetectFormat(tt.argv); got != tt.want {
			t.Errorf("DetectFormat(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
	if _, err := cli.New(cli.Command{Name: "x", Argv: []string{"x"}, Format: "cursor"}); !errors.Is(err, cli.ErrInvalidCommand) || !errors.Is(err, cli.ErrUnknownFormat) {
		t.Errorf("unknown format: %v", err)
	}
}

// What each format appends: the prompt where its CLI reads it, the system
// text as a flag (Claude Code) or before a fresh session's prompt, the
// session to resume.
func TestArgsFor(t *testing.T) {
	t.Parallel()
	msgs := ops.PromptOf([]ops.ChatMessage{{Role: history.RoleSystem, Content: "be brief"}, {Role: history.RoleUser, Content: "-fix it"}}...)
	fresh := ops.Call{Messages: msgs}
	resumed := ops.Call{Messages: msgs, Resume: "S1"}
	tests := []struct {
		format cli.Format
		call   ops.Call
		want   []string
	}{
		{cli.FormatClaude, fresh, []string{"-p", " -fix it", "--output-format", "stream-json", "--append-system-prompt", "be brief", "--verbose"}},
		{cli.FormatClaude, resumed, []string{"-p", " -fix it", "--output-format", "stream-json", "--resume", "S1", "--system-prompt", "be brief", "--verbose"}},
		{cli.FormatCodex, fresh, []string{"be brief\n\n -fix it"}},
		{cli.FormatCodex, resumed, []string{"resume", "S1", " -fix it"}},
		{cli.FormatGemini, fresh, []string{"-p", "be brief\n\n -fix it", "--output-format", "stream-json"}},
		{cli.FormatGemini, resumed, []string{"-p", " -fix it", "--output-format", "stream-json", "--resume", "S1"}},
	}
	for _, tt := range tests {
		if got := cli.ArgsFor(tt.format, tt.call); !slices.Equal(got, tt.want) {
			t.Errorf("%s, resume %q: %q, want %q", tt.format, tt.call.Resume, got, tt.want)
		}
	}
}
