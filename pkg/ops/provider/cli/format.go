package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Format is the output format of a CLI, and the arguments it takes: what
// the provider appends to the command and how it reads the output.
type Format string

// The formats of the coding-agent CLIs served (docs/agent-clis.md).
const (
	// FormatClaude is Claude Code: -p PROMPT --output-format stream-json
	// --verbose, --resume ID.
	FormatClaude Format = "claude"
	// FormatCodex is the Codex CLI's `codex exec --json` (the command
	// holds "exec" and its options): PROMPT, or resume ID PROMPT.
	FormatCodex Format = "codex"
	// FormatGemini is the Gemini CLI: -p PROMPT --output-format
	// stream-json, --resume ID.
	FormatGemini Format = "gemini"
)

// ErrUnknownFormat means a CLI definition names a format that is not one
// of Format's.
var ErrUnknownFormat = fmt.Errorf("%w: unknown format", ErrInvalidCommand)

// ParseFormat returns the format named s ("" is detected later from the
// command).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case "", FormatClaude, FormatCodex, FormatGemini:
		return f, nil
	}
	return "", fmt.Errorf("%w %q: want claude, codex or gemini", ErrUnknownFormat, s)
}

// DetectFormat returns the format of a command by its program's name:
// codex and gemini (also as codex.js, gemini.js) are theirs, anything
// else Claude Code's.
func DetectFormat(argv []string) Format {
	if len(argv) == 0 {
		return FormatClaude
	}
	name := strings.TrimSuffix(filepath.Base(argv[0]), ".js")
	switch {
	case name == "codex" || strings.HasPrefix(name, "codex-"):
		return FormatCodex
	case name == "gemini" || strings.HasPrefix(name, "gemini-"):
		return FormatGemini
	}
	return FormatClaude
}

// LineDecoder turns the output lines of one CLI run into chunks.
type LineDecoder interface {
	// Decode returns the chunks of one line; ErrNotJSON for a line that
	// is not JSON, ErrDone for an end marker.
	Decode(raw []byte) ([]ops.Chunk, error)
}

// NewDecoder returns a decoder of one run's output in format f.
func NewDecoder(f Format) LineDecoder {
	switch f {
	case FormatCodex:
		return &CodexDecoder{}
	case FormatGemini:
		return &GeminiDecoder{}
	}
	return &Decoder{}
}

// ArgsFor returns the arguments appended to a CLI of format f for call.
func ArgsFor(f Format, call ops.Call) []string {
	switch f {
	case FormatCodex:
		return codexArgs(call)
	case FormatGemini:
		return geminiArgs(call)
	}
	return Args(call)
}

// promptOf returns the system text and the prompt of call, as Args
// builds them (a prompt starting with a dash gets a leading space).
func promptOf(call ops.Call) (system, prompt string) {
	msgs, first := call.Messages, 0
	if msgs.Len() > 0 && msgs.At(0).Role == history.RoleSystem {
		system, first = msgs.At(0).Content, 1
	}
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
	if strings.HasPrefix(prompt, "-") {
		prompt = " " + prompt
	}
	return system, prompt
}

// withSystem puts the system text before the prompt of a fresh session,
// for the CLIs without a system prompt flag.
func withSystem(call ops.Call, system, prompt string) string {
	if system == "" || call.Resume != "" {
		return prompt
	}
	return system + "\n\n" + prompt
}

// codexArgs: the prompt (the system text before it on a fresh session),
// after "resume ID" when resuming.
func codexArgs(call ops.Call) []string {
	system, prompt := promptOf(call)
	prompt = withSystem(call, system, prompt)
	if call.Resume != "" {
		return []string{"resume", call.Resume, prompt}
	}
	return []string{prompt}
}

// geminiArgs: -p PROMPT (the system text before it on a fresh session),
// --output-format stream-json, --resume ID.
func geminiArgs(call ops.Call) []string {
	system, prompt := promptOf(call)
	args := []string{"-p", withSystem(call, system, prompt), "--output-format", "stream-json"}
	if call.Resume != "" {
		args = append(args, "--resume", call.Resume)
	}
	return args
}
