package ops

import (
	"context"
	"errors"
	"math"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/conform"
	"github.com/lionbus/lionbus/pkg/ops/internal/parsestage"
	"github.com/lionbus/lionbus/pkg/wire"
)

// The values of parse's handle_validation: what a request gets when the
// parse stage fails for good (ADR-0022 D3's policy names).
const (
	handleRaise       = "raise"        // the failure: extraction_failed or schema_rejected
	handleReturnValue = "return_value" // the text as it came, unparsed
	handleReturnNone  = "return_none"  // null
)

// parseData is the request data of parse. The field names are the ADR's
// parameter names: text, response_format, parse_model, fuzzy_match,
// similarity_threshold, handle_validation and max_retries of the original's
// parse, and retry_initial_delay and retry_backoff of its parse parameters
// (ADR-0022 D1).
//
// They are the wire's [wire.ParseRequest].
type parseData struct {
	wire.ParseRequest
	// Text is read as sent, over the wire type's, so that an absent text
	// is told from an empty one.
	Text *string `json:"text"`
}

// spec checks d and returns the parse stage it asks for.
func (d *parseData) spec() (*parseSpec, error) {
	if d.Text == nil {
		return nil, Errorf(CodeInvalidRequest, "data.text is required")
	}
	if len(*d.Text) > MaxExtractBytes {
		return nil, Errorf(CodeInvalidRequest, "data.text is %d bytes; at most %d are parsed", len(*d.Text), MaxExtractBytes)
	}
	schema, validator, err := decodeResponseFormat(d.ResponseFormat)
	if err != nil {
		return nil, err
	}
	if schema == nil {
		return nil, Errorf(CodeInvalidRequest, "data.response_format is required")
	}
	p := &parseSpec{Schema: schema, Validator: validator, Fuzzy: true, Threshold: conform.DefaultSimilarityThreshold, Retries: DefaultParseRetries}
	if d.FuzzyMatch != nil {
		p.Fuzzy = *d.FuzzyMatch
	}
	if t := d.SimilarityThreshold; t != nil {
		if math.IsNaN(*t) || *t < conform.MinSimilarityThreshold || *t > 1 {
			return nil, Errorf(CodeInvalidRequest, "data.similarity_threshold must be between %g and 1, got %g", conform.MinSimilarityThreshold, *t)
		}
		p.Threshold = *t
	}
	switch d.HandleValidation {
	case "":
		d.HandleValidation = handleRaise
	case handleRaise, handleReturnValue, handleReturnNone:
	default:
		return nil, Errorf(CodeInvalidRequest, "data.handle_validation must be %q, %q or %q, got %q",
			handleRaise, handleReturnValue, handleReturnNone, d.HandleValidation)
	}
	if n := d.MaxRetries; n != nil {
		switch {
		case *n < 0:
			return nil, Errorf(CodeInvalidRequest, "data.max_retries must not be negative, got %d", *n)
		case *n > MaxParseRetries:
			p.Retries = MaxParseRetries
		default:
			p.Retries = *n
		}
	}
	if p.Schedule, err = parsestage.NewSchedule(d.RetryInitialDelay, d.RetryBackoff); err != nil {
		return nil, err
	}
	return p, nil
}

// model resolves the parse model: the request's, else the branch's parse
// model, else its chat model. Without one, the error is
// returned only if a reformat round is needed.
func (d *parseData) model(b *history.Branch) (history.ModelRef, error) {
	switch {
	case d.ParseModel != nil:
		return *d.ParseModel, nil
	case b.Settings.ParseModel != nil:
		return *b.Settings.ParseModel, nil
	case b.Settings.ChatModel != nil:
		return *b.Settings.ChatModel, nil
	}
	return history.ModelRef{}, Errorf(CodeInvalidRequest,
		"the text needs a reformat round, but branch %q has no parse_model or chat_model and the request names none", b.ID)
}

// parseVerb is parse: the parse stage (see parseText) on data.text against
// data.response_format, with the branch's history before the reformat
// rounds. The value is the parsed JSON value. When the stage fails for
// good, handle_validation decides: "raise" (the default) answers the
// failure, CodeExtraction or CodeSchemaRejected; "return_value" answers the
// text itself, "return_none" null.
//
// parse records nothing and emits no signals (docs/decisions.md#reference-a9);
// a repeated request runs again, calling the model again when it needs
// reformat rounds.
func (e *Engine) parseVerb(ctx context.Context, req Request) (*Result, error) {
	var d parseData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	spec, err := d.spec()
	if err != nil {
		return nil, err
	}
	if d.MaxRetries != nil && *d.MaxRetries > MaxParseRetries {
		e.log.Warn().Str("request_id", req.ID).Int("max_retries", *d.MaxRetries).
			Int("clamped_to", MaxParseRetries).Msg("max_retries above the maximum")
	}
	b, err := e.load(ctx, req.BranchID)
	if err != nil {
		return nil, err
	}
	start := e.clock()
	model, modelErr := d.model(b)
	var calls uint64
	var usage *Usage
	v, _, err := e.parseText(ctx, parseInput{
		req: req, branch: b, history: b.Messages, text: *d.Text, spec: spec,
		model: model, modelErr: modelErr, calls: &calls, usage: &usage,
	})
	var fail *parseFailure
	switch {
	case errors.As(err, &fail) && d.HandleValidation == handleReturnValue:
		v = *d.Text
	case errors.As(err, &fail) && d.HandleValidation == handleReturnNone:
		v = nil
	case errors.As(err, &fail):
		return nil, fail.AsError(spec.Retries)
	case err != nil:
		return nil, err
	}
	value, err := marshalValue(v)
	if err != nil {
		return nil, err
	}
	return &Result{Value: value, BranchID: b.ID, Usage: usage, DurationMS: e.clock().Sub(start).Milliseconds()}, nil
}
