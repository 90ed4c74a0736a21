// Package interpretprompt holds what interpret tells the model: the
// instruction of the rewrite, the guidance made of the request's hints,
// and the bound of those hints.
package interpretprompt

import (
	"strings"

	"github.com/lionbus/lionbus/pkg/wire"
)

// MaxHint is the longest domain or style hint interpret takes, in bytes.
const MaxHint = 256

// Instruction is what interpret asks of the model.
const Instruction = "Rewrite the user input given in the context into a prompt that a language model " +
	"or another system can act on without guessing: state the task plainly, make explicit what the input only " +
	"implies, and keep its structure easy to follow. Do not invent requirements, facts or steps the input does " +
	"not contain. Answer with the rewritten prompt and nothing else."

// CheckHints refuses a domain or style hint longer than MaxHint with
// CodeInvalidRequest; prefix leads their names in the error
// ("data.<prefix>domain").
func CheckHints(prefix, domain, style string) error {
	for _, h := range []struct{ name, v string }{{"domain", domain}, {"style", style}} {
		if len(h.v) > MaxHint {
			return wire.Errorf(wire.CodeInvalidRequest, "data.%s%s is longer than %d bytes", prefix, h.name, MaxHint)
		}
	}
	return nil
}

// Guidance is the rewrite's guidance: the domain ("general" when blank),
// the style ("concise" when blank) and, when given, a sample of writing to
// follow.
func Guidance(domain, style, sample string) string {
	if strings.TrimSpace(domain) == "" {
		domain = "general"
	}
	if strings.TrimSpace(style) == "" {
		style = "concise"
	}
	g := "Domain: " + domain + ". Style of the rewritten prompt: " + style + "."
	if sample != "" {
		g += "\nWrite in the manner of this sample:\n" + sample
	}
	return g
}
