package history

import "github.com/lionbus/lionbus/pkg/ops/internal/jsonval"

// Clone returns a deep copy of b: nothing in the copy that may change
// aliases b. (Commits, which never changes, is shared.)
func (b *Branch) Clone() *Branch {
	if b == nil {
		return nil
	}
	c := *b
	c.Settings = cloneSettings(b.Settings)
	c.Messages = cloneMessages(b.Messages)
	if b.Messages != nil && c.Messages == nil {
		c.Messages = []Message{}
	}
	return &c
}

// Clone returns a deep copy of e.
func (e Event) Clone() Event {
	c := e
	if e.Settings != nil {
		s := cloneSettings(*e.Settings)
		c.Settings = &s
	}
	c.Messages = cloneMessages(e.Messages)
	if e.Result != nil {
		c.Result = append([]byte(nil), e.Result...)
	}
	if e.Approval != nil {
		a := *e.Approval
		a.Arguments = jsonval.CopyMap(e.Approval.Arguments)
		c.Approval = &a
	}
	return c
}

func cloneSettings(s Settings) Settings {
	c := s
	if s.ChatModel != nil {
		m := cloneModelRef(*s.ChatModel)
		c.ChatModel = &m
	}
	if s.ParseModel != nil {
		m := cloneModelRef(*s.ParseModel)
		c.ParseModel = &m
	}
	if s.Tools != nil {
		c.Tools = append([]string(nil), s.Tools...)
	}
	c.Notes = jsonval.CopyMap(s.Notes)
	c.Metadata = jsonval.CopyMap(s.Metadata)
	return c
}

func cloneModelRef(m ModelRef) ModelRef {
	c := m
	c.Options = jsonval.CopyMap(m.Options)
	return c
}

func cloneMessages(msgs []Message) []Message {
	if msgs == nil {
		return nil
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		out[i].Content = jsonval.CopyMap(m.Content)
		out[i].Metadata = jsonval.CopyMap(m.Metadata)
	}
	return out
}
