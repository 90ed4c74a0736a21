package budget

import (
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Estimate constants: a prompt is reserved as one token per
// BytesPerToken bytes of its text, rounded up, plus PerMessageTokens for
// each message's framing. Three bytes a token over-counts English text
// (about four) so that reconciliation mostly gives tokens back.
const (
	BytesPerToken    = 3
	PerMessageTokens = 4
)

// EstimatePrompt returns the tokens reserved for a prompt's input.
func EstimatePrompt(p ops.Prompt) int {
	return (p.Bytes()+BytesPerToken-1)/BytesPerToken + PerMessageTokens*p.Len()
}

// MaxOutput returns the call's output ceiling: its model's max_tokens (or
// max_completion_tokens) option, else def.
func MaxOutput(m history.ModelRef, def int) int {
	for _, k := range []string{"max_completion_tokens", "max_tokens"} {
		switch v := m.Options[k].(type) {
		case int:
			if v > 0 {
				return v
			}
		case int64:
			if v > 0 {
				return int(v)
			}
		case float64:
			if v > 0 {
				return int(v)
			}
		}
	}
	return def
}

// EstimateCall returns the tokens reserved for a call: its prompt estimate
// plus its output ceiling.
func EstimateCall(c ops.Call, defOutput int) int {
	return EstimatePrompt(c.Messages) + MaxOutput(c.Model, defOutput)
}
