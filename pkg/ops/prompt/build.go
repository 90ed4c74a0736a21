package prompt

import (
	"sync"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
)

// Build returns the outgoing messages of a model call on b: the
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
func Build(system string, history []history.Message, current history.Message) Prompt {
	f := newPromptFold(system)
	for i := range history {
		f.add(&history[i])
	}
	return f.finish(current)
}

// promptFold is Build's state after some of the history: the turns
// rendered so far and the action responses waiting for the next
// instruction.
//
// The turns are kept in two parts. The closed turns, which nothing changes
// any more, are the first n of a turnLog that folds extending one another
// share, so that extending a fold (and its copy in the Memo) does
// not copy the turns before. The last turn stays open, owned by the fold,
// because a following assistant response is joined to an assistant turn.
type promptFold struct {
	log     *turnLog
	n       int // turns of log that are this fold's
	open    Message
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
	turns []Message
}

func newPromptFold(system string) *promptFold {
	f := &promptFold{log: &turnLog{}, seen: map[string]bool{}}
	if system != "" {
		f.push(Message{Role: history.RoleSystem, Content: system})
	}
	return f
}

// push adds a turn, closing the open one.
func (f *promptFold) push(m Message) {
	if f.hasOpen {
		f.close(f.open)
	}
	f.open, f.hasOpen = m, true
}

// close appends m to f's closed turns. When another fold sharing the log
// has appended to it past f's turns, f first takes a copy of its own
// turns (two prompts built at once from one memo; rare).
func (f *promptFold) close(m Message) {
	l := f.log
	l.mu.Lock()
	if len(l.turns) != f.n {
		own := make([]Message, f.n, 2*f.n+1)
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
func (f *promptFold) closed() []Message {
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
		key := jsonval.Compact(item)
		if !f.seen[key] {
			f.seen[key] = true
			f.pending = append(f.pending, item)
		}
	case history.KindInstruction:
		text := renderInstruction(m.Content, f.pending, false)
		f.pending, f.seen = nil, map[string]bool{}
		if text != "" {
			f.push(Message{Role: history.RoleUser, Content: text})
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
		f.push(Message{Role: history.RoleAssistant, Content: text})
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
		p.tail = append(p.tail, Message{Role: history.RoleUser, Content: text})
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
