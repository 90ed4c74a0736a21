package ops

import (
	"context"
	"errors"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// parseFailureValue applies handle_validation to a parse failure of the
// communicate middle: the exchange was recorded,
// but the answer did not fit the generated schema. "return_none" gives
// null and "return_value" the answer's text as recorded; either way no
// action runs. ok is false when the policy is "raise", the failure is
// not a parse failure of the communicate middle, or the recorded answer
// cannot be read: the failure stands.
func (e *Engine) parseFailureValue(ctx context.Context, p *operatePlan, in MiddleInput, err error) (v any, ok bool) {
	var oe *Error
	if p.handle == handleRaise || p.middle != MiddleCommunicate || !errors.As(err, &oe) || oe.Code != CodeParse {
		return nil, false
	}
	if p.handle == handleReturnNone {
		return nil, true
	}
	b, lerr := e.load(ctx, in.BranchID)
	if lerr != nil {
		return nil, false
	}
	seq, committed := b.Commits.Seq(in.RequestID)
	if !committed {
		return nil, false
	}
	evs, herr := e.store.History(ctx, in.BranchID, seq-1, 1)
	if herr != nil || len(evs) == 0 || evs[0].RequestID != in.RequestID {
		return nil, false
	}
	for _, m := range evs[0].Messages {
		if m.Kind == history.KindAssistantResponse {
			if text, isText := m.Content[history.KeyAssistantResponse].(string); isText {
				return text, true
			}
		}
	}
	return nil, false
}
