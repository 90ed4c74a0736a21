package ops

import (
	"context"
	"slices"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/parsestage"
	"github.com/lionbus/lionbus/pkg/ops/prompt"
	"github.com/lionbus/lionbus/pkg/ops/provider"
)

// ErrSchemaRejected is wrapped by the failure of the parse stage when JSON
// was found in the text but no value of it satisfies the schema, even after
// key matching and coercion: a schema rejection (CodeSchemaRejected). The
// other failure, no JSON at all, wraps ErrNoJSON (CodeExtraction).
var ErrSchemaRejected = parsestage.ErrSchemaRejected

// parseSpec is the parse stage's target and parameters
// ([parsestage.Spec]); parseFailure why it found no value
// ([parsestage.Failure]).
type (
	parseSpec    = parsestage.Spec
	parseFailure = parsestage.Failure
)

// parseInput is one run of the parse stage on a branch.
type parseInput struct {
	req    Request
	branch *history.Branch
	// history and then exchange are what the reformat prompts show before
	// their instruction: the branch's messages and, for communicate, the
	// messages of its exchange. They are joined only when a reformat round
	// runs: the local attempt, which usually succeeds, needs neither, and
	// joining them copies the branch.
	history  []history.Message
	exchange []history.Message
	text     string
	spec     *parseSpec
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
	v, fail := in.spec.Local(in.text)
	if fail == nil {
		return v, nil, nil
	}
	if in.spec.Retries > 0 && in.modelErr != nil {
		return nil, nil, in.modelErr
	}
	past := in.history
	if len(in.exchange) > 0 && in.spec.Retries > 0 {
		past = append(slices.Clip(in.history), in.exchange...)
	}
	for round := 1; round <= in.spec.Retries; round++ {
		if err := e.wait(ctx, in.spec.Schedule.Wait(round)); err != nil {
			return nil, nil, err
		}
		ins := history.NewInstructionMessage(in.spec.Reformat(round, in.text, fail), e.clock())
		msgs := prompt.Build(in.branch.Settings.System, past, ins)
		comp, err := e.complete(ctx, in.req, in.branch, in.model, msgs, prompt.InstructionText(ins.Content), *in.calls)
		*in.calls++
		if err != nil {
			return nil, nil, err
		}
		provider.AddUsage(in.usage, comp.Usage)
		if v, fail = in.spec.Local(comp.Text); fail == nil {
			return v, comp, nil
		}
	}
	return nil, nil, fail
}
