package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/conform"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonrecover"
	"github.com/lionbus/lionbus/pkg/ops/prompt"
)

// Reformat round wording (docs/decisions.md#reference-a5).
const (
	reformatInstruction = "reformat text into specified model or structure"
	reformatGuidance    = "follow the required response format, using the model schema as a guide"
)

// maxQuotedText bounds how much of the parsed text a parse failure's message
// quotes (ADR-0022 D3: at most 200 characters).
const maxQuotedText = 200

// ErrSchemaRejected is wrapped by the failure of the parse stage when JSON
// was found in the text but no value of it satisfies the schema, even after
// key matching and coercion: a schema rejection (CodeSchemaRejected). The
// other failure, no JSON at all, wraps ErrNoJSON (CodeExtraction).
var ErrSchemaRejected = errors.New("the JSON found does not satisfy response_format")

// parseSpec is what the parse stage needs: the target schema and how hard
// to try (the parse parameters of ADR-0022 D1).
type parseSpec struct {
	schema    map[string]any // the response_format, decoded
	validator *responseSchema
	fuzzy     bool    // match keys ignoring case and separators, and by similarity
	threshold float64 // the similarity threshold of key matching
	retries   int     // reformat rounds after the local attempt
	schedule  retrySchedule
}

// parseFailure is why the parse stage found no value in a text: code is
// CodeExtraction (err wraps ErrNoJSON) or CodeSchemaRejected (err wraps
// ErrSchemaRejected), text the text that failed.
type parseFailure struct {
	code Code
	err  error
	text string
}

func (f *parseFailure) Error() string { return f.err.Error() }
func (f *parseFailure) Unwrap() error { return f.err }

// describe says what failed, after how many reformat rounds, quoting at
// most maxQuotedText bytes of the text.
func (f *parseFailure) describe(rounds int) string {
	after := ""
	if rounds > 0 {
		after = fmt.Sprintf(" (after %d reformat round(s); the last reply is quoted)", rounds)
	}
	return fmt.Sprintf("%s%s; text: %q", shortError(f.err, 600), after, Truncate(f.text, maxQuotedText))
}

// asError is the failure as the parse verb answers it: its own code.
func (f *parseFailure) asError(rounds int) *Error {
	return &Error{Code: f.code, Message: f.describe(rounds), Err: f}
}

// local is the stage's first step, without a model: recover the JSON of
// text (recoverJSON), and return the first candidate that validates as it
// is, else the first that validates once conformed to the schema (key
// matching and lax coercion, see package conform).
func (p *parseSpec) local(text string) (any, *parseFailure) {
	cands, err := jsonrecover.Recover(text)
	if err != nil {
		return nil, &parseFailure{code: CodeExtraction, err: err, text: text}
	}
	for _, c := range cands {
		if p.validator.Validate(c) == nil {
			return c, nil
		}
	}
	var first error
	for _, cand := range cands {
		v := conform.Value(cand, p.schema, p.fuzzy, p.threshold)
		err := p.validator.Validate(v)
		if err == nil {
			return v, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, &parseFailure{code: CodeSchemaRejected, err: fmt.Errorf("%w: %s", ErrSchemaRejected, shortError(first, 400)), text: text}
}

// parseInput is one run of the parse stage on a branch.
type parseInput struct {
	req    Request
	branch *history.Branch
	// history is what the reformat prompts show before their instruction:
	// the branch's messages (and, for communicate, its exchange).
	history []history.Message
	text    string
	spec    *parseSpec
	// model is the parse model; modelErr, when set, says why there is none,
	// and is returned if a reformat round is needed.
	model    history.ModelRef
	modelErr error
	// calls counts the model calls of the operation (for Call.Index);
	// usage sums their usage. Both are updated.
	calls *uint64
	usage **Usage
}

// parseText runs the parse stage on in.text (docs/decisions.md#reference-a5):
// the local attempt; if it fails, up to spec.retries reformat rounds, each
// after the wait of spec.schedule, asking the parse model to rewrite the
// text into the schema (with the branch history, the previous error and the
// text as context {"text_to_format": text}); each reply is parsed as the
// text was. The rounds record nothing.
//
// It returns the value and, when a reformat round produced it, that
// round's completion. When every attempt fails, the error is the last
// attempt's *parseFailure; a model or context failure is returned as it is.
func (e *Engine) parseText(ctx context.Context, in parseInput) (any, *Completion, error) {
	v, fail := in.spec.local(in.text)
	if fail == nil {
		return v, nil, nil
	}
	if in.spec.retries > 0 && in.modelErr != nil {
		return nil, nil, in.modelErr
	}
	for round := 1; round <= in.spec.retries; round++ {
		if err := e.wait(ctx, in.spec.schedule.wait(round)); err != nil {
			return nil, nil, err
		}
		guidance := reformatGuidance + fmt.Sprintf(
			" The previous attempt did not validate: %s. Correct exactly what that error names.", shortError(fail.err, 800))
		if round > 1 {
			guidance += fmt.Sprintf(" This is attempt %d; earlier attempts failed. Return only the JSON value, in a ```json code block.", round)
		}
		ins := history.NewInstructionMessage(history.InstructionSpec{
			Instruction: reformatInstruction, Guidance: guidance,
			Context: []any{map[string]any{"text_to_format": in.text}}, ResponseFormat: in.spec.schema,
		}, e.clock())
		msgs := prompt.Build(in.branch.Settings.System, in.history, ins)
		comp, err := e.complete(ctx, in.req, in.branch, in.model, msgs, prompt.InstructionText(ins.Content), *in.calls)
		*in.calls++
		if err != nil {
			return nil, nil, err
		}
		addUsage(in.usage, comp.Usage)
		if v, fail = in.spec.local(comp.Text); fail == nil {
			return v, comp, nil
		}
	}
	return nil, nil, fail
}
