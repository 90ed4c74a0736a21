package ops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
)

// buildPrompt returns the outgoing messages of a model call on b: the
// branch's system message as a real system message, then the history turns
// and finally the current instruction.
//
// History is walked oldest first: system messages are skipped (the system
// text comes from the branch settings), action requests are dropped, action
// responses are folded into the Context of the next instruction (or of the
// current one when no later instruction exists) as {function, arguments,
// output}, historical instructions are rendered without tools and response
// schema, and consecutive assistant responses are joined with a blank line.
// Instructions are never dropped. Empty renders are skipped.
func buildPrompt(system string, history []history.Message, current history.Message) Prompt {
	f := newPromptFold(system)
	for i := range history {
		f.add(&history[i])
	}
	return f.finish(current)
}

// DefaultMaxPromptBytes is the default bound of one model call's prompt
// text (Config.MaxPromptBytes): 32 MiB, far above what any model's context
// takes, so that only a branch grown without bound meets it.
const DefaultMaxPromptBytes = 32 << 20

// prompt builds the prompt of x's model call, history then x.ins (see
// promptMemo), and refuses one of more than the engine's MaxPromptBytes.
func (e *Engine) prompt(x *exchange, history []history.Message) (Prompt, error) {
	msgs := e.prompts.build(x.branch.ID, x.branch.Settings.System, history, x.ins)
	if err := checkPrompt(x.branch.ID, msgs, e.maxPrompt); err != nil {
		return Prompt{}, err
	}
	return msgs, nil
}

// checkPrompt refuses a prompt of more than max bytes of text: the branch is
// too long to be sent as one conversation.
func checkPrompt(branch string, msgs Prompt, max int) error {
	if n := msgs.Bytes(); n > max {
		return Errorf(CodeInvalidRequest, "branch %s is too long for one model call: its prompt is %d bytes, over the bound of %d; send clear_messages, or clear or clone the branch", branch, n, max)
	}
	return nil
}

// promptFold is buildPrompt's state after some of the history: the turns
// rendered so far and the action responses waiting for the next
// instruction.
//
// The turns are kept in two parts. The closed turns, which nothing changes
// any more, are the first n of a turnLog that folds extending one another
// share, so that extending a fold (and its copy in the promptMemo) does
// not copy the turns before. The last turn stays open, owned by the fold,
// because a following assistant response is joined to an assistant turn.
type promptFold struct {
	log     *turnLog
	n       int // turns of log that are this fold's
	open    ChatMessage
	hasOpen bool
	pending []any
	seen    map[string]bool // compactJSON of each pending item
}

// turnLog is an append-only list of closed prompt turns. A turn is never
// changed once appended, so prompts may share the list's backing array;
// only the fold whose n is the list's length may append to it (see
// promptFold.close).
type turnLog struct {
	mu    sync.Mutex
	turns []ChatMessage
}

func newPromptFold(system string) *promptFold {
	f := &promptFold{log: &turnLog{}, seen: map[string]bool{}}
	if system != "" {
		f.push(ChatMessage{Role: history.RoleSystem, Content: system})
	}
	return f
}

// push adds a turn, closing the open one.
func (f *promptFold) push(m ChatMessage) {
	if f.hasOpen {
		f.close(f.open)
	}
	f.open, f.hasOpen = m, true
}

// close appends m to f's closed turns. When another fold sharing the log
// has appended to it past f's turns, f first takes a copy of its own
// turns (two prompts built at once from one memo; rare).
func (f *promptFold) close(m ChatMessage) {
	l := f.log
	l.mu.Lock()
	if len(l.turns) != f.n {
		own := make([]ChatMessage, f.n, 2*f.n+1)
		copy(own, l.turns[:f.n])
		l.mu.Unlock()
		l = &turnLog{turns: own}
		f.log = l
		l.mu.Lock()
	}
	l.turns = append(l.turns, m)
	f.n++
	l.mu.Unlock()
}

// closed returns f's closed turns, shared: never to be written.
func (f *promptFold) closed() []ChatMessage {
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	return f.log.turns[:f.n:f.n]
}

// add folds one history message.
func (f *promptFold) add(m *history.Message) {
	switch m.Kind {
	case history.KindActionResponse:
		item := map[string]any{
			history.KeyFunction:  m.Content[history.KeyFunction],
			history.KeyArguments: m.Content[history.KeyArguments],
			history.KeyOutput:    m.Content[history.KeyOutput],
		}
		if e, ok := m.Content[history.KeyError]; ok && !jsonval.IsEmpty(e) {
			item[history.KeyError] = e
		}
		key := compactJSON(item)
		if !f.seen[key] {
			f.seen[key] = true
			f.pending = append(f.pending, item)
		}
	case history.KindInstruction:
		text := renderInstruction(m.Content, f.pending, false)
		f.pending, f.seen = nil, map[string]bool{}
		if text != "" {
			f.push(ChatMessage{Role: history.RoleUser, Content: text})
		}
	case history.KindAssistantResponse:
		text := m.Text()
		if text == "" {
			return
		}
		if f.hasOpen && f.open.Role == history.RoleAssistant {
			f.open.Content += "\n\n" + text
			return
		}
		f.push(ChatMessage{Role: history.RoleAssistant, Content: text})
	}
}

// finish returns the prompt: the folded turns and the current instruction.
// It leaves f as it was.
func (f *promptFold) finish(current history.Message) Prompt {
	p := Prompt{head: f.closed()}
	if f.hasOpen {
		p.tail = append(p.tail, f.open)
	}
	if text := renderInstruction(current.Content, f.pending, true); text != "" {
		p.tail = append(p.tail, ChatMessage{Role: history.RoleUser, Content: text})
	}
	return p
}

// clone returns a fold that continues from f: it shares f's closed turns
// (see close) and copies the rest.
func (f *promptFold) clone() *promptFold {
	c := &promptFold{
		log: f.log, n: f.n, open: f.open, hasOpen: f.hasOpen,
		pending: append([]any(nil), f.pending...),
		seen:    make(map[string]bool, len(f.seen)),
	}
	for k := range f.seen {
		c.seen[k] = true
	}
	return c
}

// renderInstruction renders an instruction's content as readable text:
// the sections Guidance, Instruction, Context, Tools, ResponseSchema and
// ResponseFormat, in that order, each "Name:" followed by its body, separated
// by blank lines; empty sections are left out. Strings are written verbatim,
// other values as indented JSON (object keys sorted, so the text is
// deterministic). extra is appended to the Context. Tools and the response
// schema are rendered only when full is true (the current instruction).
//
// When the content has plain_content it is sent verbatim instead.
func renderInstruction(c map[string]any, extra []any, full bool) string {
	if pc, ok := c[history.KeyPlainContent].(string); ok && pc != "" {
		return pc
	}
	var sections []string
	add := func(name, body string) {
		body = strings.TrimRight(body, " \n\t")
		if body != "" {
			sections = append(sections, name+":\n"+body)
		}
	}
	add("Guidance", renderValue(c[history.KeyGuidance]))
	add("Instruction", renderValue(c[history.KeyInstruction]))
	ctx := append(asList(c[history.KeyContext]), extra...)
	add("Context", renderList(ctx))
	if full {
		add("Tools", renderList(asList(c[history.KeyToolSchemas])))
		if schema, ok := c[history.KeyResponseFormat].(map[string]any); ok && len(schema) > 0 {
			add("ResponseSchema", indentJSON(schema))
			add("ResponseFormat", "Answer with one JSON value that satisfies ResponseSchema, "+
				"inside a ```json code block, like this example:\n```json\n"+
				indentJSON(schemaExample(schema, 0))+"\n```")
		}
	}
	return strings.Join(sections, "\n\n")
}

// renderValue writes a string verbatim and anything else as indented JSON.
func renderValue(v any) string {
	if jsonval.IsEmpty(v) {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return indentJSON(v)
}

// renderList writes one "- item" per entry; multi-line items are indented.
func renderList(items []any) string {
	var b strings.Builder
	for _, it := range items {
		if jsonval.IsEmpty(it) {
			continue
		}
		text := renderValue(it)
		b.WriteString("- ")
		b.WriteString(strings.ReplaceAll(text, "\n", "\n  "))
		b.WriteString("\n")
	}
	return b.String()
}

// asList returns v as a list: a list as is, nil as empty, anything else as
// a one-element list.
func asList(v any) []any {
	switch t := v.(type) {
	case nil:
		return nil
	case []any:
		return append([]any(nil), t...)
	case []map[string]any:
		out := make([]any, len(t))
		for i, m := range t {
			out[i] = m
		}
		return out
	case []string:
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = s
		}
		return out
	}
	return []any{v}
}

func indentJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimRight(buf.String(), "\n")
}

func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimRight(buf.String(), "\n")
}

// instructionText is the text form of an instruction's "instruction" field
// (a string verbatim, any other value as compact JSON), or its plain_content.
func instructionText(c map[string]any) string {
	v := c[history.KeyInstruction]
	if jsonval.IsEmpty(v) {
		s, _ := c[history.KeyPlainContent].(string)
		return s
	}
	return textOf(v)
}

// maxExampleDepth bounds the nesting schemaExample follows.
const maxExampleDepth = 8

// schemaExample builds an example value for a JSON Schema: const, then the
// first of examples or enum, then default, then a placeholder by type
// ("<string>" or the description, 0, true, null), following properties,
// items and the first anyOf/oneOf/allOf branch. $ref is not followed.
func schemaExample(s map[string]any, depth int) any {
	if depth > maxExampleDepth || s == nil {
		return nil
	}
	if v, ok := s["const"]; ok {
		return v
	}
	if ex, ok := s["examples"].([]any); ok && len(ex) > 0 {
		return ex[0]
	}
	if en, ok := s["enum"].([]any); ok && len(en) > 0 {
		return en[0]
	}
	if v, ok := s["default"]; ok {
		return v
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok {
			for _, a := range alts {
				if am, ok := a.(map[string]any); ok && am["type"] != "null" {
					return schemaExample(am, depth+1)
				}
			}
		}
	}
	typ := s["type"]
	if list, ok := typ.([]any); ok {
		typ = nil
		for _, t := range list {
			if t != "null" {
				typ = t
				break
			}
		}
	}
	if typ == nil {
		if _, ok := s["properties"]; ok {
			typ = "object"
		} else if _, ok := s["items"]; ok {
			typ = "array"
		}
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			pm, _ := props[k].(map[string]any)
			out[k] = schemaExample(pm, depth+1)
		}
		return out
	case "array":
		items, _ := s["items"].(map[string]any)
		if items == nil {
			return []any{}
		}
		return []any{schemaExample(items, depth+1)}
	case "string":
		if d, ok := s["description"].(string); ok && d != "" && len(d) <= 80 {
			return "<" + d + ">"
		}
		return "<string>"
	case "integer", "number":
		return 0
	case "boolean":
		return true
	}
	return nil
}
