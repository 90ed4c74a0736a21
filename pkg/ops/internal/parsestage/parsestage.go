// Package parsestage holds the model-free parts of the parse stage that
// communicate and parse share (docs/decisions.md#reference-a5): the local
// attempt (JSON recovered from a text, conformed to the schema, validated),
// the two ways it fails, the wording of a reformat round and ADR-0022 D1's
// retry schedule. The reformat rounds themselves call a model: they are the
// engine's.
package parsestage

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/conform"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonrecover"
	"github.com/lionbus/lionbus/pkg/ops/internal/schema"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Reformat round wording (docs/decisions.md#reference-a5).
const (
	reformatInstruction = "reformat text into specified model or structure"
	reformatGuidance    = "follow the required response format, using the model schema as a guide"
)

// MaxQuotedText bounds how much of the parsed text a parse failure's
// message quotes (ADR-0022 D3: at most 200 characters).
const MaxQuotedText = 200

// ErrSchemaRejected is wrapped by the failure of the parse stage when JSON
// was found in the text but no value of it satisfies the schema, even after
// key matching and coercion: a schema rejection (CodeSchemaRejected). The
// other failure, no JSON at all, wraps jsonrecover.ErrNoJSON
// (CodeExtraction).
var ErrSchemaRejected = errors.New("the JSON found does not satisfy response_format")

// Spec is what the parse stage needs: the target schema and how hard to
// try (the parse parameters of ADR-0022 D1).
type Spec struct {
	Schema    map[string]any // the response_format, decoded
	Validator *schema.Compiled
	Fuzzy     bool    // match keys ignoring case and separators, and by similarity
	Threshold float64 // the similarity threshold of key matching
	Retries   int     // reformat rounds after the local attempt
	Schedule  Schedule
}

// Failure is why the parse stage found no value in a text: Code is
// CodeExtraction (Err wraps jsonrecover.ErrNoJSON) or CodeSchemaRejected
// (Err wraps ErrSchemaRejected), Text the text that failed.
type Failure struct {
	Code wire.Code
	Err  error
	Text string
}

// Error returns the failure's error message.
func (f *Failure) Error() string { return f.Err.Error() }

// Unwrap returns the failure's error.
func (f *Failure) Unwrap() error { return f.Err }

// Describe says what failed, after how many reformat rounds, quoting at
// most MaxQuotedText bytes of the text.
func (f *Failure) Describe(rounds int) string {
	after := ""
	if rounds > 0 {
		after = fmt.Sprintf(" (after %d reformat round(s); the last reply is quoted)", rounds)
	}
	return fmt.Sprintf("%s%s; text: %q", ShortError(f.Err, 600), after, wire.Truncate(f.Text, MaxQuotedText))
}

// AsError is the failure as the parse verb answers it: its own code.
func (f *Failure) AsError(rounds int) *wire.Error {
	return &wire.Error{Code: f.Code, Message: f.Describe(rounds), Err: f}
}

// Local is the stage's first step, without a model: recover the JSON of
// text (see package jsonrecover), and return the first candidate that
// validates as it is, else the first that validates once conformed to the
// schema (key matching and lax coercion, see package conform).
func (p *Spec) Local(text string) (any, *Failure) {
	cands, err := jsonrecover.Recover(text)
	if err != nil {
		return nil, &Failure{Code: wire.CodeExtraction, Err: err, Text: text}
	}
	for _, c := range cands {
		if p.Validator.Validate(c) == nil {
			return c, nil
		}
	}
	var first error
	for _, cand := range cands {
		v := conform.Value(cand, p.Schema, p.Fuzzy, p.Threshold)
		err := p.Validator.Validate(v)
		if err == nil {
			return v, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, &Failure{Code: wire.CodeSchemaRejected, Err: fmt.Errorf("%w: %s", ErrSchemaRejected, ShortError(first, 400)), Text: text}
}

// Reformat is the instruction of reformat round (from 1) after the
// failure fail: rewrite text into the spec's schema, correcting what the
// failure names, with the text as context {"text_to_format": text}.
func (p *Spec) Reformat(round int, text string, fail *Failure) history.InstructionSpec {
	guidance := reformatGuidance + fmt.Sprintf(
		" The previous attempt did not validate: %s. Correct exactly what that error names.", ShortError(fail.Err, 800))
	if round > 1 {
		guidance += fmt.Sprintf(" This is attempt %d; earlier attempts failed. Return only the JSON value, in a ```json code block.", round)
	}
	return history.InstructionSpec{
		Instruction: reformatInstruction, Guidance: guidance,
		Context: []any{map[string]any{"text_to_format": text}}, ResponseFormat: p.Schema,
	}
}

// ShortError is err's message on one line, bounded to n bytes.
func ShortError(err error, n int) string {
	return wire.Truncate(strings.Join(strings.Fields(err.Error()), " "), n)
}
