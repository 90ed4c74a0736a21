package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ModelRef names a model: a provider, a model name and provider options.
// (Its decoding errors start "ops: model reference", as they always have:
// they reach clients inside invalid_request messages.)
//
// In JSON it is either a string "provider:model" (for example
// "openai:gpt-4.1-mini" or "scripted:echo") or an object
// {"provider": ..., "model": ..., ...options}; options are every other key
// of the object (for the scripted provider, "replies").
type ModelRef struct {
	Provider string         `json:"provider" msgpack:"provider"`
	Model    string         `json:"model,omitempty" msgpack:"model,omitempty"`
	Options  map[string]any `json:"-" msgpack:"options,omitempty"`
}

// ParseModelRef parses the string form "provider:model". The model part may
// itself contain colons ("ollama:llama3:8b").
func ParseModelRef(s string) (ModelRef, error) {
	provider, model, ok := strings.Cut(s, ":")
	if !ok || provider == "" || model == "" {
		return ModelRef{}, fmt.Errorf("ops: model reference %q is not of the form provider:model", s)
	}
	return ModelRef{Provider: provider, Model: model}, nil
}

// String returns "provider:model".
func (m ModelRef) String() string { return m.Provider + ":" + m.Model }

// UnmarshalJSON accepts the string and the object form.
func (m *ModelRef) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		r, err := ParseModelRef(s)
		if err != nil {
			return err
		}
		*m = r
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf("ops: model reference must be a string or an object: %w", err)
	}
	if obj == nil {
		return fmt.Errorf("ops: model reference must be a string or an object")
	}
	provider, _ := obj["provider"].(string)
	if provider == "" {
		return fmt.Errorf("ops: model reference object needs a non-empty string \"provider\"")
	}
	model, _ := obj["model"].(string)
	if v, ok := obj["model"]; ok && model == "" && v != nil {
		return fmt.Errorf("ops: model reference \"model\" must be a string")
	}
	delete(obj, "provider")
	delete(obj, "model")
	if len(obj) == 0 {
		obj = nil
	}
	*m = ModelRef{Provider: provider, Model: model, Options: obj}
	return nil
}

// MarshalJSON writes the string form when there are no options, else the
// object form.
func (m ModelRef) MarshalJSON() ([]byte, error) {
	if len(m.Options) == 0 && m.Model != "" {
		return json.Marshal(m.String())
	}
	obj := make(map[string]any, len(m.Options)+2)
	for k, v := range m.Options {
		obj[k] = v
	}
	obj["provider"] = m.Provider
	if m.Model != "" {
		obj["model"] = m.Model
	}
	return json.Marshal(obj)
}
