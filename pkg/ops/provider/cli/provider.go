package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Name is the provider name: requests name a configured CLI "cli:NAME".
const Name = "cli"

// Defaults of [Provider].
const (
	// DefaultKillGrace is how long a CLI has between SIGTERM and SIGKILL.
	DefaultKillGrace = 5 * time.Second
	// DefaultExitWait is how long a CLI whose output ended may take to
	// exit before it is stopped.
	DefaultExitWait = 10 * time.Second
	// MaxLine bounds one line of a CLI's output.
	MaxLine = 16 << 20
	// MaxStderr bounds the standard error kept for a failure message.
	MaxStderr = 256 << 10
)

// Sentinel errors.
var (
	// ErrInvalidCommand means a CLI definition cannot be used.
	ErrInvalidCommand = errors.New("cli: invalid command definition")
	// ErrUnknownCLI means a model names no configured CLI.
	ErrUnknownCLI = errors.New("cli: no CLI of that name is configured")
)

// Command is a configured CLI: what the worker runs for the model
// cli:NAME. Its command line, directory and environment are worker
// configuration; a request only supplies the prompt and, through its
// branch, the session to resume.
type Command struct {
	// Name is the NAME of cli:NAME ([ops.ValidID]).
	Name string
	// Argv is the program and its leading arguments. The provider appends
	// its format's (see [ArgsFor]); Claude Code's are -p PROMPT
	// --output-format stream-json --verbose, then --resume ID and the
	// system prompt flag when they apply.
	Argv []string
	// Dir is the working directory; "" means the worker's.
	Dir string
	// Env is added to the worker's environment (KEY=VALUE each).
	Env []string
	// Format is the CLI's output format and arguments; "" means the one
	// DetectFormat finds from Argv.
	Format Format
}

// ParseCommand parses "NAME=COMMAND" (the worker's --cli flag): COMMAND is
// split into words at spaces, with single or double quotes grouping words.
func ParseCommand(spec string) (Command, error) {
	name, command, ok := strings.Cut(spec, "=")
	name = strings.TrimSpace(name)
	if !ok || !ops.ValidID(name) {
		return Command{}, fmt.Errorf("%w: %q is not NAME=COMMAND with NAME of [A-Za-z0-9_-]", ErrInvalidCommand, spec)
	}
	argv, err := splitWords(command)
	if err != nil {
		return Command{}, fmt.Errorf("%w: %s: %w", ErrInvalidCommand, name, err)
	}
	if len(argv) == 0 {
		return Command{}, fmt.Errorf("%w: %s has an empty command", ErrInvalidCommand, name)
	}
	return Command{Name: name, Argv: argv}, nil
}

// splitWords splits s at unquoted spaces; quotes group, backslash escapes
// the next character outside single quotes.
func splitWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, errors.New("unterminated quote or escape")
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// Provider runs configured coding-agent CLIs (Claude Code's stream-json
// output) as subprocesses. Each call starts one process in its own
// process group; on every exit (end, failure, cancellation, a consumer
// that stops reading) the group is sent SIGTERM, then SIGKILL after
// KillGrace, and the process is reaped before Stream returns. On Linux
// the CLI runs under a subreaper, the worker's executable run again,
// which also ends the processes the CLI started outside its group (Claude
// Code's Bash commands run in sessions of their own) before it exits. It
// is safe for concurrent use.
type Provider struct {
	cmds map[string]Command
	// KillGrace is the time between SIGTERM and SIGKILL; 0 means
	// DefaultKillGrace.
	KillGrace time.Duration
	// ExitWait is how long a CLI whose output ended may take to exit;
	// 0 means DefaultExitWait.
	ExitWait time.Duration
	// Logger receives the provider's logs. The zero value discards them.
	Logger zerolog.Logger
	// NoReaper runs the CLI directly rather than under the subreaper (on
	// Linux the default; see [Provider]): only its process group is then
	// stopped, and a process it started in a session of its own outlives
	// the call.
	NoReaper bool
}

var (
	_ ops.CLIProvider  = (*Provider)(nil)
	_ ops.ResultTotals = (*Provider)(nil)
)

// New returns a provider of the given CLIs; it fails with
// ErrInvalidCommand for a bad or repeated name or an empty command.
func New(cmds ...Command) (*Provider, error) {
	p := &Provider{cmds: map[string]Command{}}
	for _, c := range cmds {
		if !ops.ValidID(c.Name) || len(c.Argv) == 0 || c.Argv[0] == "" {
			return nil, fmt.Errorf("%w: %q needs a valid name and a command", ErrInvalidCommand, c.Name)
		}
		f, err := ParseFormat(string(c.Format))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		if f == "" {
			f = DetectFormat(c.Argv)
		}
		c.Format = f
		if _, dup := p.cmds[c.Name]; dup {
			return nil, fmt.Errorf("%w: %q is defined twice", ErrInvalidCommand, c.Name)
		}
		p.cmds[c.Name] = c
	}
	return p, nil
}

// Names returns the configured CLI names.
func (p *Provider) Names() []string {
	out := make([]string, 0, len(p.cmds))
	for n := range p.cmds {
		out = append(out, n)
	}
	return out
}

// TotalKeys returns the result metadata keys whose numbers add up over
// the turns of one response: the cost and the turns ([ops.ResultTotals]).
func (p *Provider) TotalKeys() []string { return []string{MetaTotalCostUSD, MetaNumTurns} }

// IsCLI reports whether model names a configured CLI.
func (p *Provider) IsCLI(model history.ModelRef) bool {
	_, ok := p.cmds[model.Model]
	return ok
}

// Complete runs the CLI and returns its whole answer (the text chunks
// concatenated); an error chunk fails it.
func (p *Provider) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	var failure *ops.Chunk
	comp, err := p.Stream(ctx, call, func(c ops.Chunk) error {
		if c.Kind == ops.ChunkError && c.IsError && failure == nil {
			failure = &c
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if failure != nil {
		msg := failure.Content
		if msg == "" {
			msg = "(empty error)"
		}
		return nil, &ops.ProviderError{Provider: Name, Message: msg}
	}
	return comp, nil
}

// Args returns the arguments the provider appends to a CLI's command for
// call: the prompt, the stream-json output, and --resume with the system
// prompt flag. A fresh session gets every non-system message's content
// joined with newlines, a leading system message as
// --append-system-prompt; a resumed one only the last message (the
// engine leaves out of it what the session holds), the system message as
// --system-prompt. A prompt or system message starting with a
// dash gets a leading space, so the CLI cannot read it as a flag.
func Args(call ops.Call) []string {
	var system string
	msgs, first := call.Messages, 0
	if msgs.Len() > 0 && msgs.At(0).Role == history.RoleSystem {
		system, first = msgs.At(0).Content, 1
	}
	var prompt string
	if call.Resume != "" {
		if last, ok := msgs.Last(); ok && msgs.Len() > first {
			prompt = last.Content
		}
	} else {
		parts := make([]string, 0, msgs.Len())
		for i, m := range msgs.All() {
			if i >= first {
				parts = append(parts, m.Content)
			}
		}
		prompt = strings.Join(parts, "\n")
	}
	if prompt == "" {
		prompt = call.Instruction
	}
	// A prompt is request data: one that starts with a dash must not be
	// taken for a flag of the CLI (a request never chooses what runs).
	if strings.HasPrefix(prompt, "-") {
		prompt = " " + prompt
	}
	if strings.HasPrefix(system, "-") {
		system = " " + system
	}
	args := []string{"-p", prompt, "--output-format", "stream-json"}
	if call.Resume != "" {
		args = append(args, "--resume", call.Resume)
		if system != "" {
			args = append(args, "--system-prompt", system)
		}
	} else if system != "" {
		args = append(args, "--append-system-prompt", system)
	}
	return append(args, "--verbose")
}

// Stream runs the CLI for call and emits its output as chunks. It returns
// when the CLI's output ended and the process was reaped, or when emit
// failed or ctx ended (the process group is then stopped and reaped
// first). A CLI that exits non-zero without having reported an error in
// its stream fails with an *ops.ProviderError carrying its stderr.
func (p *Provider) Stream(ctx context.Context, call ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
	c, ok := p.cmds[call.Model.Model]
	if !ok {
		return nil, &ops.ProviderError{Provider: Name, Message: fmt.Sprintf("%v: %q", ErrUnknownCLI, call.Model.Model), Err: ErrUnknownCLI}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	argv := append(append([]string(nil), c.Argv...), ArgsFor(c.Format, call)...)
	env := append(os.Environ(), c.Env...)
	cmd := exec.Command(argv[0], argv[1:]...)
	if p.NoReaper {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	} else if prog, args, renv, ok := reaperCommand(argv, p.grace()/2); ok {
		// The CLI runs under a subreaper that ends every process it
		// started, in its group or not (see reaper_linux.go). It kills
		// what is left at half the grace, so that it has the other half
		// to reap the tree before the group's SIGKILL would kill it, and
		// orphan what it had not reaped yet.
		cmd = exec.Command(prog, args...)
		env = append(env, renv)
		cmd.SysProcAttr = reaperSysProcAttr()
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	cmd.Dir = c.Dir
	cmd.Env = env
	stderr := &limitedBuffer{max: MaxStderr}
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second
	// An own pipe rather than StdoutPipe: Wait (which reaps the process
	// as soon as it exits) must not close the output before it is read.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, &ops.ProviderError{Provider: Name, Message: "stdout pipe: " + err.Error(), Err: err}
	}
	defer stdout.Close()
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, &ops.ProviderError{Provider: Name, Message: fmt.Sprintf("start %s: %v", c.Name, err), Err: err}
	}
	proc := &process{cmd: cmd, grace: p.grace(), exitWait: p.exitWait(), waited: make(chan struct{})}
	go proc.wait()
	// A cancelled request stops the process, which ends its output.
	stopWatch := context.AfterFunc(ctx, proc.terminate)
	defer stopWatch()

	var (
		dec      = NewDecoder(c.Format)
		text     strings.Builder
		session  string
		usage    *ops.Usage
		emitErr  error
		reported bool
	)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
read:
	for sc.Scan() {
		chunks, derr := dec.Decode(sc.Bytes())
		switch {
		case errors.Is(derr, ErrDone):
			break read
		case derr != nil:
			p.log().Debug().Str("cli", c.Name).Str("line", ops.Truncate(sc.Text(), 200)).Msg("output line skipped")
			continue
		}
		for _, ch := range chunks {
			switch ch.Kind {
			case ops.ChunkText:
				text.WriteString(ch.Content)
			case ops.ChunkSystem, ops.ChunkResult:
				if id, _ := ch.Metadata[ops.MetaSessionID].(string); id != "" {
					session = id
				}
				if u := usageOf(ch.Metadata); u != nil {
					usage = u
				}
			case ops.ChunkError:
				reported = reported || ch.IsError
			}
			if err := emit(ch); err != nil {
				emitErr = err
				break read
			}
		}
	}
	scanErr := sc.Err()
	exitErr := proc.finish(emitErr != nil || ctx.Err() != nil)
	switch {
	case emitErr != nil:
		return nil, fmt.Errorf("cli: stream stopped by its consumer: %w", emitErr)
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case scanErr != nil:
		return nil, &ops.ProviderError{Provider: Name, Message: fmt.Sprintf("read the output of %s: %v", c.Name, scanErr), Err: scanErr}
	case exitErr != nil && !reported:
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = exitErr.Error()
		}
		return nil, &ops.ProviderError{Provider: Name, Message: fmt.Sprintf("%s: %s", c.Name, msg), Err: exitErr}
	}
	return &ops.Completion{Text: text.String(), SessionID: session, Usage: usage}, nil
}

func usageOf(md map[string]any) *ops.Usage {
	u, ok := md["usage"].(map[string]any)
	if !ok {
		return nil
	}
	in, _ := u["input_tokens"].(float64)
	out, _ := u["output_tokens"].(float64)
	return &ops.Usage{InputTokens: int(in), OutputTokens: int(out), TotalTokens: int(in + out)}
}

func (p *Provider) grace() time.Duration {
	if p.KillGrace > 0 {
		return p.KillGrace
	}
	return DefaultKillGrace
}

func (p *Provider) exitWait() time.Duration {
	if p.ExitWait > 0 {
		return p.ExitWait
	}
	return DefaultExitWait
}

func (p *Provider) log() *zerolog.Logger { return &p.Logger }

// process is one running CLI.
type process struct {
	cmd      *exec.Cmd
	grace    time.Duration
	exitWait time.Duration
	waited   chan struct{}
	waitErr  error
	once     sync.Once
}

// wait reaps the process; waited closes then.
func (p *process) wait() {
	p.waitErr = p.cmd.Wait()
	close(p.waited)
}

// terminate stops the process group: SIGTERM, then SIGKILL after the
// grace period unless the leader exited. It runs once.
func (p *process) terminate() {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(p.grace)
		defer t.Stop()
		select {
		case <-p.waited:
		case <-t.C:
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
}

// finish ends the process: at once when stop, else after it had
// ExitWait to exit on its own. The whole group is killed in the end (no
// descendant outlives the call) and the leader is reaped. It returns the
// leader's exit error.
func (p *process) finish(stop bool) error {
	if !stop {
		t := time.NewTimer(p.exitWait)
		select {
		case <-p.waited:
		case <-t.C:
		}
		t.Stop()
	}
	p.terminate()
	<-p.waited
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) || p.waitErr == nil {
		return p.waitErr
	}
	if errors.Is(p.waitErr, exec.ErrWaitDelay) {
		return nil
	}
	return p.waitErr
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ io.Writer = (*limitedBuffer)(nil)
