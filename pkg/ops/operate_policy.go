package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/ops/internal/parsestage"
)

// maxMismatchQuote is how much of a result a handle_validation "raise"
// error quotes, in bytes of compact JSON.
const maxMismatchQuote = 200

// parseFailureValue applies handle_validation to a parse failure of the
// communicate middle: the exchange was recorded,
// but the answer did not fit the generated schema. "return_none" gives
// null and "return_value" the answer's text as recorded; either way no
// action runs. ok is false when the policy is "raise", the failure is
// not a parse failure of the communicate middle, or the recorded answer
// cannot be read: the failure stands.
func (o *operation) parseFailureValue(ctx context.Context, in MiddleInput, err error) (v any, ok bool) {
	e, p := o.e, o.p
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

// policy applies handle_validation against the caller's response_format
// only; done reports that it decided the result (or the error).
func (o *operation) policy(value any) (res *Result, done bool, err error) {
	if o.p.validator == nil {
		return nil, false, nil
	}
	verr := o.p.validator.Validate(callerView(value, o.sch, o.p))
	if verr == nil {
		return nil, false, nil
	}
	switch o.p.handle {
	case handleRaise:
		return nil, true, &Error{Code: CodeSchemaRejected, Err: verr, Message: fmt.Sprintf(
			"the result does not match response_format: %s; result: %s", parsestage.ShortError(verr, 300),
			Truncate(jsonval.Compact(value), maxMismatchQuote))}
	case handleReturnNone:
		o.out.Value = json.RawMessage("null")
		res, err = o.finish()
	default:
		res, err = o.value(value) // return_value, as it is
	}
	return res, true, err
}

// callerView is what the outer policy validates: the value without the
// fields operate generated, which the caller's schema does not know.
func callerView(v any, sch *operateSchemas, p *operatePlan) any {
	obj, ok := v.(map[string]any)
	if !ok || sch == nil {
		return v
	}
	view := make(map[string]any, len(obj))
	for k, x := range obj {
		if _, field := p.fields[k]; field {
			continue
		}
		if (k == fieldReason && p.reason) || (p.actions && (k == fieldActionRequired || k == fieldActionRequests)) {
			continue
		}
		view[k] = x
	}
	return view
}
