package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/conform"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
)

// communicate is the recorded exchange of ADR-0021 D3: optionally clear the
// messages, call the chat model with the branch history and the instruction,
// then record the instruction and the assistant response, together with the
// result, as ONE EventMessages (so the clear, the exchange and the result
// become visible atomically).
//
// The value is the response text with skip_validation or when nothing is to
// be parsed; with response_format, what the parse stage makes of the text
// (see parseText: recovered JSON, keys matched and values coerced to the
// schema, validated; else at most num_parse_retries reformat rounds with
// the parse model, each seeing the branch history and the exchange); with
// request_fields, the object of the matching fields of the recovered JSON
// ({} when there is none). When parsing fails for good, the exchange is
// still recorded (as the ADR does) and the request fails with CodeParse,
// whichever way the stage failed (ADR-0021 D3: parse errors are wrapped);
// a redelivery answers the same error. A provider failure records nothing.
func (e *Engine) communicate(ctx context.Context, req Request) (*Result, error) {
	x, err := e.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if seq, ok := x.branch.Commits.Seq(req.ID); ok {
		return e.replayCommitted(ctx, req, seq, replayRun)
	}
	return e.runLifecycle(ctx, req, x.branch.ID, func() (*Result, error) { return x.communicate(ctx, req) })
}

// communicate makes x's exchange, parses the answer and records it (see
// the verb communicate).
func (x *exchange) communicate(ctx context.Context, req Request) (*Result, error) {
	e := x.e
	t0 := e.clock()
	if err := x.call(ctx, req); err != nil {
		return nil, err
	}
	var value any
	var operr *Error
	switch {
	case x.data.SkipValidation:
		value = x.comp.Text
	case x.data.validator != nil:
		v, err := x.parseStructured(ctx, req)
		if err != nil {
			oe := asError(ctx, err)
			if oe.Code != CodeParse {
				return nil, oe
			}
			operr = oe
		}
		value = v
	case len(x.data.fields) > 0:
		value = conform.Fields(x.comp.Text, x.data.fields)
	default:
		value = x.comp.Text
	}
	if operr == nil && len(x.data.tools) > 0 && len(x.comp.ToolCalls) > 0 {
		// Tools were offered (operate with actions): the provider's
		// native tool calls become action requests too.
		value = withNativeToolCalls(value, x.comp.ToolCalls)
	}
	res := &Result{BranchID: x.branch.ID, Usage: x.usage}
	if operr == nil {
		v, err := marshalValue(value)
		if err != nil {
			return nil, err
		}
		res.Value = v
	}
	res.DurationMS = e.clock().Sub(t0).Milliseconds()
	return e.commit(ctx, req, x, res, operr)
}

// parseStructured runs the parse stage on the response (with the branch
// history and the exchange before the reformat rounds). A successful
// reformat replaces the response's metadata.model_response (the first one
// is kept as original_model_response). A parse failure is a CodeParse
// *Error wrapping the stage's failure.
func (x *exchange) parseStructured(ctx context.Context, req Request) (any, error) {
	e := x.e
	past := x.branch.Messages
	if x.data.ClearMessages {
		past = nil
	}
	spec := x.data.parseSpec()
	v, comp, err := e.parseText(ctx, parseInput{
		req: req, branch: x.branch, history: past, exchange: []history.Message{x.ins, x.res}, text: x.comp.Text, spec: spec,
		model: x.parse, calls: &x.calls, usage: &x.usage,
	})
	var fail *parseFailure
	switch {
	case errors.As(err, &fail):
		return nil, &Error{Code: CodeParse, Err: fail, Message: fmt.Sprintf(
			"the response could not be parsed into response_format: %s: %s", fail.Code, fail.Describe(spec.Retries))}
	case err != nil:
		return nil, err
	case comp != nil:
		reformatted := comp.Message(x.parse, e.clock())
		if orig, ok := x.res.Metadata[history.MetaModelResponse]; ok {
			x.res.Metadata[history.MetaOriginalModelResponse] = orig
		}
		x.res.Metadata[history.MetaModelResponse] = reformatted.Metadata[history.MetaModelResponse]
		x.res.Metadata["parsed_text"] = comp.Text
	}
	return v, nil
}

// withNativeToolCalls adds calls to the action_requests of value, a
// structured result, as {function, arguments}, leaving out any already
// there with the same function and arguments, and sets action_required.
// A value that is not an object (no structured result) is returned as is:
// action requests come only from a structured result.
func withNativeToolCalls(value any, calls []ToolCall) any {
	obj, ok := value.(map[string]any)
	if !ok {
		return value
	}
	list, _ := obj[fieldActionRequests].([]any)
	seen := make(map[string]bool, len(list)+len(calls))
	for _, r := range list {
		seen[jsonval.Compact(r)] = true
	}
	for _, c := range calls {
		args := c.Arguments
		if args == nil {
			args = map[string]any{}
		}
		r := map[string]any{"function": c.Name, "arguments": jsonval.CopyMap(args)}
		if k := jsonval.Compact(r); !seen[k] {
			seen[k] = true
			list = append(list, r)
		}
	}
	obj[fieldActionRequests] = list
	if len(list) > 0 {
		obj["action_required"] = true
	}
	return obj
}
