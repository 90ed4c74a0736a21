package cli_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
)

// setup returns a provider of the fake CLI as cli:fake, and the directory
// its processes write their records into.
func setup(t *testing.T) (*cli.Provider, string) {
	t.Helper()
	bin := clitest.Build(t)
	dir := t.TempDir()
	p, err := cli.New(cli.Command{Name: "fake", Argv: []string{bin}, Env: []string{"FAKECLI_DIR=" + dir, "FAKECLI_DELAY_MS=20"}})
	if err != nil {
		t.Fatal(err)
	}
	p.KillGrace = 300 * time.Millisecond
	return p, dir
}

func call(prompt, resume string) ops.Call {
	return ops.Call{
		Model:    history.ModelRef{Provider: cli.Name, Model: "fake"},
		Messages: ops.PromptOf([]ops.ChatMessage{{Role: history.RoleSystem, Content: "be brief"}, {Role: history.RoleUser, Content: prompt}}...),
		Resume:   resume, Attempt: 1,
	}
}

func kinds(cs []ops.Chunk) []ops.ChunkKind {
	out := make([]ops.ChunkKind, len(cs))
	for i, c := range cs {
		out[i] = c.Kind
	}
	return out
}

func TestProvider_Stream_recorded_session(t *testing.T) {
	t.Parallel()
	p, dir := setup(t)
	var got []ops.Chunk
	comp, err := p.Stream(context.Background(), call("list the files", ""), func(c ops.Chunk) error {
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []ops.ChunkKind{ops.ChunkSystem, ops.ChunkThinking, ops.ChunkText, ops.ChunkText, ops.ChunkToolUse,
		ops.ChunkToolResult, ops.ChunkToolResult, ops.ChunkText, ops.ChunkResult}
	if !slices.Equal(kinds(got), want) {
		t.Fatalf("chunk kinds %v, want %v", kinds(got), want)
	}
	recs := clitest.Records(t, dir)
	if len(recs) != 1 {
		t.Fatalf("%d processes ran, want 1", len(recs))
	}
	if !clitest.Reaped(recs[0].PID) {
		t.Errorf("process %d was not reaped", recs[0].PID)
	}
	if comp.SessionID == "" || got[0].Metadata[ops.MetaSessionID] != comp.SessionID {
		t.Errorf("session %q, system chunk %v", comp.SessionID, got[0].Metadata)
	}
	if comp.Text != "I'll list the files in the repository.There are two files: a.txt and b.txt." {
		t.Errorf("text %q", comp.Text)
	}
	if tu := got[4]; tu.ToolName != "Bash" || tu.ToolID != "toolu_01" || tu.ToolInput["command"] != "ls" {
		t.Errorf("tool_use %+v", tu)
	}
	if u := comp.Usage; u == nil || u.OutputTokens != 250 {
		t.Errorf("usage %+v", comp.Usage)
	}
	// A fresh session: the prompt, the system message appended, no --resume.
	if v, _ := recs[0].Arg("-p"); v != "list the files" {
		t.Errorf("prompt %q", v)
	}
	if v, _ := recs[0].Arg("--append-system-prompt"); v != "be brief" {
		t.Errorf("--append-system-prompt %q", v)
	}
	if _, ok := recs[0].Arg("--resume"); ok {
		t.Error("--resume passed for a fresh session")
	}
	if v, _ := recs[0].Arg("--output-format"); v != "stream-json" || !slices.Contains(recs[0].Argv, "--verbose") {
		t.Errorf("argv %v lacks --output-format stream-json --verbose", recs[0].Argv)
	}
}

// 0021-D3-13: a known session is resumed.
func TestProvider_Stream_resume(t *testing.T) {
	t.Parallel()
	p, dir := setup(t)
	comp, err := p.Stream(context.Background(), call("go on", "sess-42"), func(ops.Chunk) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	recs := clitest.Records(t, dir)
	if v, _ := recs[0].Arg("--resume"); v != "sess-42" || comp.SessionID != "sess-42" {
		t.Errorf("--resume %q, session %q", v, comp.SessionID)
	}
	if v, _ := recs[0].Arg("--system-prompt"); v != "be brief" {
		t.Errorf("--system-prompt %q on resume", v)
	}
}

// 0021-D3-18: every exit stops and reaps the process.
func TestProvider_Stream_exits(t *testing.T) {
	t.Parallel()
	stop := errors.New("consumer stops")
	tests := []struct {
		name       string
		prompt     string
		cancelAt   int // cancel the context after this many chunks (0: never)
		stopAt     int // emit fails at this chunk (0: never)
		wantKinds  []ops.ChunkKind
		wantErr    error
		wantProv   bool
		wantErrMsg string
	}{
		{name: "error result", prompt: "FAIL",
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkThinking, ops.ChunkText, ops.ChunkText, ops.ChunkResult, ops.ChunkError}},
		{name: "empty error line", prompt: "ERREMPTY",
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkThinking, ops.ChunkText, ops.ChunkText, ops.ChunkError}},
		{name: "crash", prompt: "CRASH", wantProv: true, wantErrMsg: "crashed on purpose",
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkThinking, ops.ChunkText, ops.ChunkText}},
		{name: "cancel while hanging", prompt: "HANG", cancelAt: 4, wantErr: context.Canceled,
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkThinking, ops.ChunkText, ops.ChunkText}},
		{name: "cancel ignoring SIGTERM", prompt: "HANG_HARD", cancelAt: 4, wantErr: context.Canceled,
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkThinking, ops.ChunkText, ops.ChunkText}},
		{name: "consumer stops", prompt: "SLOW", stopAt: 3, wantErr: stop,
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkThinking, ops.ChunkText}},
		{name: "child process", prompt: "CHILD",
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkThinking, ops.ChunkText, ops.ChunkText, ops.ChunkToolUse,
				ops.ChunkToolResult, ops.ChunkToolResult, ops.ChunkText, ops.ChunkResult}},
		// The subreaper ends a descendant outside the CLI's process group.
		{name: "child in a session of its own", prompt: "SETSID",
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkThinking, ops.ChunkText, ops.ChunkText, ops.ChunkToolUse,
				ops.ChunkToolResult, ops.ChunkToolResult, ops.ChunkText, ops.ChunkResult}},
		{name: "cancel, child in a session of its own", prompt: "SETSID HANG", cancelAt: 4, wantErr: context.Canceled,
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkThinking, ops.ChunkText, ops.ChunkText}},
		// Issue 26, "nothing outlives a run": the CLI and its child in a
		// session of its own both ignore SIGTERM; the SIGKILL after the
		// grace ends both.
		{name: "cancel, CLI and child in a session of its own ignoring SIGTERM", prompt: "SETSID HANG_HARD", cancelAt: 4, wantErr: context.Canceled,
			wantKinds: []ops.ChunkKind{ops.ChunkSystem, ops.ChunkThinking, ops.ChunkText, ops.ChunkText}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, dir := setup(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var got []ops.Chunk
			_, err := p.Stream(ctx, call(tt.prompt, ""), func(c ops.Chunk) error {
				got = append(got, c)
				if len(got) == tt.stopAt {
					return stop
				}
				if len(got) == tt.cancelAt {
					cancel()
				}
				return nil
			})
			var pe *ops.ProviderError
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			case tt.wantProv && (!errors.As(err, &pe) || !strings.Contains(pe.Message, tt.wantErrMsg)):
				t.Fatalf("error %v, want a provider error with %q", err, tt.wantErrMsg)
			case tt.wantErr == nil && !tt.wantProv && err != nil:
				t.Fatalf("error %v", err)
			}
			if !slices.Equal(kinds(got), tt.wantKinds) {
				t.Errorf("chunk kinds %v, want %v", kinds(got), tt.wantKinds)
			}
			for _, r := range clitest.Records(t, dir) {
				if !clitest.Reaped(r.PID) {
					t.Errorf("process %d still exists after Stream returned", r.PID)
				}
				if r.Child != 0 && !clitest.WaitGone(r.Child, 5*time.Second) {
					t.Errorf("child process %d outlived the call", r.Child)
				}
			}
		})
	}
}

// 0021-D3-17: a deadline stops a CLI that hangs.
func TestProvider_Stream_deadline(t *testing.T) {
	t.Parallel()
	p, dir := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := p.Stream(ctx, call("HANG", ""), func(ops.Chunk) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the deadline", err)
	}
	for _, r := range clitest.Records(t, dir) {
		if !clitest.Reaped(r.PID) {
			t.Errorf("process %d still exists", r.PID)
		}
	}
}

func TestProvider_Complete(t *testing.T) {
	t.Parallel()
	p, _ := setup(t)
	comp, err := p.Complete(context.Background(), call("hello", ""))
	if err != nil || !strings.HasSuffix(comp.Text, "a.txt and b.txt.") {
		t.Fatalf("Complete = %+v, %v", comp, err)
	}
	_, err = p.Complete(context.Background(), call("FAIL", ""))
	var pe *ops.ProviderError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "Overloaded") {
		t.Fatalf("Complete(FAIL) error %v", err)
	}
}

func TestProvider_unknown_and_missing(t *testing.T) {
	t.Parallel()
	p, err := cli.New(cli.Command{Name: "gone", Argv: []string{filepath.Join(t.TempDir(), "no-such-cli")}})
	if err != nil {
		t.Fatal(err)
	}
	var pe *ops.ProviderError
	if _, err := p.Stream(context.Background(), ops.Call{Model: history.ModelRef{Provider: "cli", Model: "other"}}, nil); !errors.Is(err, cli.ErrUnknownCLI) {
		t.Errorf("unknown CLI: %v", err)
	}
	if _, err := p.Stream(context.Background(), ops.Call{Model: history.ModelRef{Provider: "cli", Model: "gone"}}, nil); !errors.As(err, &pe) {
		t.Errorf("missing program: %v", err)
	}
	if p.IsCLI(history.ModelRef{Provider: "cli", Model: "other"}) || !p.IsCLI(history.ModelRef{Provider: "cli", Model: "gone"}) {
		t.Error("IsCLI")
	}
}

// A request's text never becomes a flag of the CLI.
func TestArgs_prompt_is_never_a_flag(t *testing.T) {
	t.Parallel()
	c := call("--dangerously-skip-permissions", "")
	msgs := c.Messages.Slice()
	msgs[0].Content = "--mcp-config x"
	c.Messages = ops.PromptOf(msgs...)
	args := cli.Args(c)
	want := []string{"-p", " --dangerously-skip-permissions", "--output-format", "stream-json", "--append-system-prompt", " --mcp-config x", "--verbose"}
	if !slices.Equal(args, want) {
		t.Errorf("Args = %q, want %q", args, want)
	}
}

func TestParseCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec    string
		want    cli.Command
		wantErr bool
	}{
		{spec: "claude=claude --model sonnet", want: cli.Command{Name: "claude", Argv: []string{"claude", "--model", "sonnet"}}},
		{spec: `dev=/opt/my cli/claude "--append-system-prompt" 'be brief please'`, want: cli.Command{Name: "dev", Argv: []string{"/opt/my", "cli/claude", "--append-system-prompt", "be brief please"}}},
		{spec: `esc=a\ b c`, want: cli.Command{Name: "esc", Argv: []string{"a b", "c"}}},
		{spec: "noequals", wantErr: true},
		{spec: "bad name=claude", wantErr: true},
		{spec: "empty=  ", wantErr: true},
		{spec: `quote=claude "open`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := cli.ParseCommand(tt.spec)
		if tt.wantErr {
			if !errors.Is(err, cli.ErrInvalidCommand) {
				t.Errorf("ParseCommand(%q) error %v, want ErrInvalidCommand", tt.spec, err)
			}
			continue
		}
		if err != nil || got.Name != tt.want.Name || !slices.Equal(got.Argv, tt.want.Argv) {
			t.Errorf("ParseCommand(%q) = %+v, %v; want %+v", tt.spec, got, err, tt.want)
		}
	}
	if _, err := cli.New(cli.Command{Name: "a", Argv: []string{"x"}}, cli.Command{Name: "a", Argv: []string{"y"}}); !errors.Is(err, cli.ErrInvalidCommand) {
		t.Errorf("duplicate name: %v", err)
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}

// Why the subreaper: without it, a process the CLI started in a session
// of its own (as Claude Code runs Bash) outlives the call, since only the
// CLI's process group is signalled.
func TestProvider_Stream_without_reaper(t *testing.T) {
	t.Parallel()
	p, dir := setup(t)
	p.NoReaper = true
	if _, err := p.Stream(context.Background(), call("SETSID", ""), func(ops.Chunk) error { return nil }); err != nil {
		t.Fatal(err)
	}
	recs := clitest.Records(t, dir)
	if len(recs) != 1 || recs[0].Child == 0 {
		t.Fatalf("records %+v", recs)
	}
	child := recs[0].Child
	defer syscall.Kill(child, syscall.SIGKILL)
	if clitest.WaitGone(child, 500*time.Millisecond) {
		t.Errorf("child %d ended with the call without the reaper; the reaper is then no longer needed", child)
	}
}
