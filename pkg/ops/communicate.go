package ops

import (
	"context"
	"fmt"
)

// Reformat round wording (docs/decisions.md#reference-a5).
const (
	reformatInstruction = "reformat text into specified model or structure"
	reformatGuidance    = "follow the required response format, using the model schema as a guide"
)

// communicate is the recorded exchange of ADR-0021 D3: optionally clear the
// messages, call the chat model with the branch history and the instruction,
// then record the instruction and the assistant response, together with the
// result, as ONE EventMessages (so the clear, the exchange and the result
// become visible atomically).
//
// The value is the response text with skip_validation or when nothing is to
// be parsed; with response_format, the JSON value extracted from the text
// (see recoverJSON) that validates against the schema, after at most
// num_parse_retries reformat rounds with the parse model (each sees the
// branch history, the exchange and a context {"text_to_format": text}); with
// request_fields, the object of the matching fields of the extracted JSON
// ({} when there is none). When parsing fails for good, the exchange is
// still recorded (as the ADR does) and the request fails with CodeParse; a
// redelivery answers the same error. A provider failure records nothing.
func (e *Engine) communicate(ctx context.Context, req Request) (*Result, error) {
	x, err := e.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if seq, ok := x.branch.Commits[req.ID]; ok {
		return e.replayCommitted(ctx, req, seq, replayRun)
	}
	e.emit(ctx, Signal{Type: SignalRunStart, Verb: req.Verb, BranchID: x.branch.ID, RequestID: req.ID})
	res, err := e.communicateRun(ctx, req, x)
	if err != nil {
		oe := asError(ctx, err)
		e.emit(ctx, Signal{Type: SignalRunFailed, Verb: req.Verb, BranchID: x.branch.ID, RequestID: req.ID, Err: oe})
		return nil, oe
	}
	e.emit(ctx, Signal{Type: SignalRunEnd, Verb: req.Verb, BranchID: x.branch.ID, RequestID: req.ID, Result: res})
	return res, nil
}

func (e *Engine) communicateRun(ctx context.Context, req Request, x *exchange) (*Result, error) {
	t0 := e.clock()
	if err := e.run(ctx, req, x); err != nil {
		return nil, err
	}
	var value any
	var operr *Error
	switch {
	case x.data.SkipValidation:
		value = x.comp.Text
	case x.data.validator != nil:
		v, err := e.parseStructured(ctx, req, x)
		if err != nil {
			oe := asError(ctx, err)
			if oe.Code != CodeParse {
				return nil, oe
			}
			operr = oe
		}
		value = v
	case len(x.data.fields) > 0:
		value = matchFields(x.comp.Text, x.data.fields)
	default:
		value = x.comp.Text
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

// parseStructured extracts and validates the response; on failure it runs
// reformat rounds with the parse model. A successful reformat replaces the
// response's metadata.model_response (the first one is kept as
// original_model_response).
func (e *Engine) parseStructured(ctx context.Context, req Request, x *exchange) (any, error) {
	text := x.comp.Text
	v, lastErr := extractValid(text, x.data.validator)
	if lastErr == nil {
		return v, nil
	}
	history := append(append([]Message(nil), x.branch.Messages...), x.ins, x.res)
	if x.data.ClearMessages {
		history = []Message{x.ins, x.res}
	}
	for attempt := 1; attempt <= x.data.retries; attempt++ {
		guidance := reformatGuidance + fmt.Sprintf(
			" The previous attempt did not validate: %s. Correct exactly what that error names.", shortError(lastErr, 800))
		if attempt > 1 {
			guidance += fmt.Sprintf(" This is attempt %d; earlier attempts failed. Return only the JSON value, in a ```json code block.", attempt)
		}
		ins := NewInstructionMessage(InstructionSpec{
			Instruction: reformatInstruction, Guidance: guidance,
			Context: []any{map[string]any{"text_to_format": text}}, ResponseFormat: x.data.schema,
		}, e.clock())
		msgs := buildPrompt(x.branch.Settings.System, history, ins)
		comp, err := e.complete(ctx, req, x.branch, x.parse, msgs, instructionText(ins.Content), x.calls)
		x.calls++
		if err != nil {
			return nil, err
		}
		addUsage(&x.usage, comp.Usage)
		v, lastErr = extractValid(comp.Text, x.data.validator)
		if lastErr == nil {
			reformatted := e.assistantMessage(x.parse, comp)
			if orig, ok := x.res.Metadata[MetaModelResponse]; ok {
				x.res.Metadata[MetaOriginalModelResponse] = orig
			}
			x.res.Metadata[MetaModelResponse] = reformatted.Metadata[MetaModelResponse]
			x.res.Metadata["parsed_text"] = comp.Text
			return v, nil
		}
	}
	return nil, &Error{Code: CodeParse, Message: fmt.Sprintf(
		"the response does not satisfy response_format after %d reformat round(s): %s", x.data.retries, shortError(lastErr, 800))}
}

// extractValid returns the first JSON value in text that validates.
func extractValid(text string, schema *responseSchema) (any, error) {
	cands, err := recoverJSON(text)
	if err != nil {
		return nil, err
	}
	var first error
	for _, c := range cands {
		err := schema.validate(c)
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}
