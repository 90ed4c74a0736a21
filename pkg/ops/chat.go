package ops

import (
	"context"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/conform"
	"github.com/lionbus/lionbus/pkg/ops/internal/decode"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/ops/internal/parsestage"
	"github.com/lionbus/lionbus/pkg/ops/internal/toolschema"
	"github.com/lionbus/lionbus/pkg/ops/prompt"
	"github.com/lionbus/lionbus/pkg/ops/provider"
	"github.com/lionbus/lionbus/pkg/wire"
)

// MaxParseRetries is the upper clamp of num_parse_retries (ADR-0021 D3);
// DefaultParseRetries is its default.
const (
	MaxParseRetries     = 5
	DefaultParseRetries = 3
)

// chatData is the request data shared by chat, chat_and_record and
// communicate: the wire's [wire.CommunicateRequest] (whose fields are the
// ADR's parameter names; chat and chat_and_record read theirs from it),
// with what check derives from it.
type chatData struct {
	wire.CommunicateRequest

	// tools are the tool schemas of the instruction; only a Middle's
	// caller sets them (communicate's request data has no such field).
	tools []any

	// Filled by check.
	schema    map[string]any
	validator *responseSchema
	fields    []string
	retries   int
	schedule  parsestage.Schedule
}

// check validates the decoded data and fills the derived fields.
func (d *chatData) check() error {
	if jsonval.IsEmpty(d.Instruction) && d.PlainContent == "" {
		return Errorf(CodeInvalidRequest, "data.instruction is required (or data.plain_content)")
	}
	switch d.Instruction.(type) {
	case nil, string, map[string]any:
	default:
		return Errorf(CodeInvalidRequest, "data.instruction must be a string or an object, not %T", d.Instruction)
	}
	var err error
	if d.schema, d.validator, err = decodeResponseFormat(d.ResponseFormat); err != nil {
		return err
	}
	if len(d.RequestFields) > 0 && string(d.RequestFields) != "null" {
		fields, err := decode.RequestFields(d.RequestFields)
		if err != nil {
			return err
		}
		d.fields = fields
	}
	d.retries = DefaultParseRetries
	if d.NumParseRetries != nil {
		switch n := *d.NumParseRetries; {
		case n < 0:
			return Errorf(CodeInvalidRequest, "data.num_parse_retries must not be negative, got %d", n)
		case n > MaxParseRetries:
			d.retries = MaxParseRetries
		default:
			d.retries = n
		}
	}
	if d.schedule, err = parsestage.NewSchedule(d.RetryInitialDelay, d.RetryBackoff); err != nil {
		return err
	}
	for _, a := range []struct{ name, v string }{{"sender", d.Sender}, {"recipient", d.Recipient}} {
		if len(a.v) > 256 {
			return Errorf(CodeInvalidRequest, "data.%s is longer than 256 characters", a.name)
		}
	}
	return nil
}

// parseSpec is the parse stage of communicate's response_format: keys
// matched fuzzily, num_parse_retries reformat rounds on the request's
// schedule.
func (d *chatData) parseSpec() *parseSpec {
	return &parseSpec{
		Schema: d.schema, Validator: d.validator, Fuzzy: true, Threshold: conform.DefaultSimilarityThreshold,
		Retries: d.retries, Schedule: d.schedule,
	}
}

// spec builds the instruction of the request.
func (d *chatData) spec() history.InstructionSpec {
	s := history.InstructionSpec{
		Instruction: d.Instruction, Guidance: d.Guidance, Context: jsonval.AsList(d.Context),
		ResponseFormat: d.schema, ToolSchemas: d.tools, PlainContent: d.PlainContent,
		Sender: d.Sender, Recipient: d.Recipient,
	}
	return s
}

// models resolves the chat and parse models: the request's override, else
// the branch's, and the parse model defaults to the chat model.
func (d *chatData) models(b *history.Branch) (chat, parse history.ModelRef, err error) {
	switch {
	case d.ChatModel != nil:
		chat = *d.ChatModel
	case b.Settings.ChatModel != nil:
		chat = *b.Settings.ChatModel
	default:
		return chat, parse, Errorf(CodeInvalidRequest, "branch %q has no chat_model and the request names none", b.ID)
	}
	switch {
	case d.ParseModel != nil:
		parse = *d.ParseModel
	case b.Settings.ParseModel != nil:
		parse = *b.Settings.ParseModel
	default:
		parse = chat
	}
	return chat, parse, nil
}

// exchange runs one chat turn on b without recording it: it builds the
// instruction and the prompt and calls the chat model.
type exchange struct {
	e      *Engine
	branch *history.Branch
	data   *chatData
	chat   history.ModelRef
	parse  history.ModelRef
	ins    history.Message
	res    history.Message
	comp   *Completion
	usage  *Usage
	calls  uint64
	// streamID is the request id the exchange's chunks are published
	// under: the request's own, or the caller's for a middle.
	streamID string
}

// prepare decodes and checks the data and loads the branch.
func (e *Engine) prepare(ctx context.Context, req Request) (*exchange, error) {
	var d chatData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	return e.prepareData(ctx, req, &d)
}

// prepareData checks d and loads the branch of req for an exchange: the
// part of prepare after decoding, for callers that hold the data already
// (the communicate middle).
func (e *Engine) prepareData(ctx context.Context, req Request, d *chatData) (*exchange, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.NumParseRetries != nil && *d.NumParseRetries > MaxParseRetries {
		e.log.Warn().Str("request_id", req.ID).Int("num_parse_retries", *d.NumParseRetries).
			Int("clamped_to", MaxParseRetries).Msg("num_parse_retries above the maximum")
	}
	b, err := e.load(ctx, req.BranchID)
	if err != nil {
		return nil, err
	}
	x := &exchange{e: e, branch: b, data: d}
	if x.chat, x.parse, err = d.models(b); err != nil {
		return nil, err
	}
	return x, nil
}

// prepareStateless prepares a chat without a branch: the exchange runs on
// an empty branch that is never stored, so the request must name its
// chat_model. A batch's stateless items run so, without a branch of their
// own to create and delete.
func (e *Engine) prepareStateless(req Request, d *chatData) (*exchange, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.ChatModel == nil {
		return nil, Errorf(CodeInvalidRequest, "a chat without a branch must name its chat_model")
	}
	x := &exchange{e: e, branch: &history.Branch{}, data: d}
	var err error
	if x.chat, x.parse, err = d.models(x.branch); err != nil {
		return nil, err
	}
	return x, nil
}

// call calls the chat model once with the branch history (or none, when
// clear_messages) followed by the instruction.
func (x *exchange) call(ctx context.Context, req Request) error {
	e := x.e
	past := x.branch.Messages
	if x.data.ClearMessages {
		past = nil
	}
	x.ins = history.NewInstructionMessage(x.data.spec(), e.clock())
	msgs, err := x.prompt(past)
	if err != nil {
		return err
	}
	var comp *Completion
	if x.data.Stream {
		comp, err = x.stream(ctx, req, msgs)
	} else {
		comp, err = e.complete(ctx, req, x.branch, x.chat, msgs, prompt.InstructionText(x.ins.Content), x.calls, toolschema.Native(x.data.tools)...)
	}
	x.calls++
	if err != nil {
		return err
	}
	provider.AddUsage(&x.usage, comp.Usage)
	x.comp = comp
	x.res = comp.Message(x.chat, e.clock())
	return nil
}

// chatVerb is chat: one unrecorded model call; the value is the text. A
// chat without a branch runs on an empty one (see prepareStateless).
func (e *Engine) chatVerb(ctx context.Context, req Request) (*Result, error) {
	var d chatData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	var x *exchange
	var err error
	if req.BranchID == "" {
		x, err = e.prepareStateless(req, &d)
	} else {
		x, err = e.prepareData(ctx, req, &d)
	}
	if err != nil {
		return nil, err
	}
	if err := x.call(ctx, req); err != nil {
		return nil, err
	}
	v, err := marshalValue(x.comp.Text)
	if err != nil {
		return nil, err
	}
	return &Result{Value: v, BranchID: x.branch.ID, Usage: x.usage}, nil
}

// chatAndRecord is chat_and_record: chat, then record the instruction and
// the response in one event; the value is the text. It emits
// message.added signals but no run lifecycle (ADR-0021 D4).
func (e *Engine) chatAndRecord(ctx context.Context, req Request) (*Result, error) {
	x, err := e.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if seq, ok := x.branch.Commits.Seq(req.ID); ok {
		return e.replayCommitted(ctx, req, seq, replayMessages)
	}
	start := e.clock()
	if err := x.call(ctx, req); err != nil {
		return nil, err
	}
	v, err := marshalValue(x.comp.Text)
	if err != nil {
		return nil, err
	}
	res := &Result{Value: v, BranchID: x.branch.ID, Usage: x.usage}
	res.DurationMS = e.clock().Sub(start).Milliseconds()
	return e.commit(ctx, req, x, res, nil)
}
