package ops

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
	c.Notes = copyMap(s.Notes)
	c.Metadata = copyMap(s.Metadata)
	return c
}

func cloneModelRef(m ModelRef) ModelRef {
	c := m
	c.Options = copyMap(m.Options)
	return c
}

func cloneMessages(msgs []Message) []Message {
	if msgs == nil {
		return nil
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		out[i].Content = copyMap(m.Content)
		out[i].Metadata = copyMap(m.Metadata)
	}
	return out
}

// copyMap deep-copies a JSON-like map.
func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = copyValue(x)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(t))
		for i, x := range t {
			out[i] = copyMap(x)
		}
		return out
	case []string:
		return append([]string(nil), t...)
	default:
		return v
	}
}
