package ops

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
)

// MaxParseRetries is the upper clamp of num_parse_retries (ADR-0021 D3);
// DefaultParseRetries is its default.
const (
	MaxParseRetries     = 5
	DefaultParseRetries = 3
)

// chatData is the request data shared by chat, chat_and_record and
// communicate; the field names are the ADR's parameter names.
type chatData struct {
	Instruction     any             `json:"instruction"`
	Guidance        any             `json:"guidance"`
	Context         any             `json:"context"`
	ResponseFormat  json.RawMessage `json:"response_format"`
	ChatModel       *ModelRef       `json:"chat_model"`
	ParseModel      *ModelRef       `json:"parse_model"`
	SkipValidation  bool            `json:"skip_validation"`
	ClearMessages   bool            `json:"clear_messages"`
	RequestFields   json.RawMessage `json:"request_fields"`
	NumParseRetries *int            `json:"num_parse_retries"`
	Sender          string          `json:"sender"`
	Recipient       string          `json:"recipient"`
	PlainContent    string          `json:"plain_content"`
	// Stream asks for the model's answer as chunks too, on the request's
	// chunk stream, as it arrives (a provider that cannot stream answers
	// at once); the result is the same.
	Stream bool `json:"stream"`

	// RetryInitialDelay (seconds) and RetryBackoff set the schedule of the
	// reformat rounds (see retrySchedule); nil keeps the default.
	RetryInitialDelay *float64 `json:"retry_initial_delay"`
	RetryBackoff      *float64 `json:"retry_backoff"`

	// tools are the tool schemas of the instruction; only a Middle's
	// caller sets them (communicate's request data has no such field).
	tools []any

	// Filled by check.
	schema    map[string]any
	validator *responseSchema
	fields    []string
	retries   int
	schedule  retrySchedule
}

// check validates the decoded data and fills the derived fields.
func (d *chatData) check() error {
	if isEmpty(d.Instruction) && d.PlainContent == "" {
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
		fields, err := requestFieldNames(d.RequestFields)
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
	if d.schedule, err = newRetrySchedule(d.RetryInitialDelay, d.RetryBackoff); err != nil {
		return err
	}
	for _, a := range []struct{ name, v string }{{"sender", d.Sender}, {"recipient", d.Recipient}} {
		if len(a.v) > 256 {
			return Errorf(CodeInvalidRequest, "data.%s is longer than 256 characters", a.name)
		}
	}
	return nil
}

// requestFieldNames accepts an object (its keys) or a list of strings.
func requestFieldNames(raw json.RawMessage) ([]string, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err == nil {
		names := make([]string, 0, len(obj))
		for k := range obj {
			names = append(names, k)
		}
		sortStrings(names)
		return names, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	return nil, Errorf(CodeInvalidRequest, "data.request_fields must be an object or a list of field names")
}

// parseSpec is the parse stage of communicate's response_format: keys
// matched fuzzily, num_parse_retries reformat rounds on the request's
// schedule.
func (d *chatData) parseSpec() *parseSpec {
	return &parseSpec{
		schema: d.schema, validator: d.validator, fuzzy: true, threshold: DefaultSimilarityThreshold,
		retries: d.retries, schedule: d.schedule,
	}
}

// spec builds the instruction of the request.
func (d *chatData) spec() InstructionSpec {
	s := InstructionSpec{
		Instruction: d.Instruction, Guidance: d.Guidance, Context: asList(d.Context),
		ResponseFormat: d.schema, ToolSchemas: d.tools, PlainContent: d.PlainContent,
		Sender: d.Sender, Recipient: d.Recipient,
	}
	return s
}

// models resolves the chat and parse models: the request's override, else
// the branch's, and the parse model defaults to the chat model.
func (d *chatData) models(b *Branch) (chat, parse ModelRef, err error) {
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

// observeCall makes the model call through f, telling the engine's
// observer (when there is one) that it starts and how it ended; f gets
// the context the observer returned.
func (e *Engine) observeCall(ctx context.Context, call Call, f func(context.Context) (*Completion, error)) (*Completion, error) {
	if e.observer == nil {
		return f(ctx)
	}
	ctx, observed := e.observer.ModelCall(ctx, call)
	comp, err := f(ctx)
	if observed != nil {
		observed(comp, err)
	}
	return comp, err
}

// complete makes one model call of an operation; calls counts the calls the
// operation already made (for Call.Index); tools, when given, are offered
// to the model natively (Call.Tools).
func (e *Engine) complete(ctx context.Context, req Request, b *Branch, model ModelRef, msgs Prompt, instruction string, calls uint64, tools ...ToolSpec) (*Completion, error) {
	prov, err := e.providers.Lookup(model.Provider)
	if err != nil {
		return nil, Errorf(CodeInvalidRequest, "model %s: %v", model.String(), err)
	}
	attempt := req.Attempt
	if attempt < 1 {
		attempt = 1
	}
	call := Call{
		Model: model, Messages: msgs, Instruction: instruction,
		BranchID: b.ID, RequestID: req.ID, Index: b.ModelCalls + calls, Attempt: attempt,
		Tools: tools,
	}
	comp, err := e.observeCall(ctx, call, func(ctx context.Context) (*Completion, error) {
		if sp, ok := prov.(StreamingProvider); ok {
			if emit := chunkEmitter(ctx); emit != nil {
				return sp.Stream(ctx, call, emit)
			}
		}
		return prov.Complete(ctx, call)
	})
	if err != nil {
		var pe *ProviderError
		if errors.As(err, &pe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		// A plain error is final unless it is a network or I/O timeout,
		// which a later attempt may well not hit.
		return nil, &ProviderError{Provider: model.Provider, Message: err.Error(), Temporary: isTimeout(err), Err: err}
	}
	if comp == nil {
		return nil, &ProviderError{Provider: model.Provider, Message: "returned no completion"}
	}
	return comp, nil
}

// isTimeout reports whether err is a timeout that does not match
// context.DeadlineExceeded: a net.Error that timed out, or an I/O deadline
// (os.ErrDeadlineExceeded).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// assistantMessage records a completion.
func (e *Engine) assistantMessage(model ModelRef, comp *Completion) Message {
	var raw any
	if len(comp.Raw) > 0 {
		if err := json.Unmarshal(comp.Raw, &raw); err != nil {
			raw = string(comp.Raw)
		}
	}
	m := NewAssistantResponse(comp.Text, raw, e.clock())
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	m.Metadata[MetaModel] = model.String()
	if comp.Usage != nil {
		m.Metadata[MetaUsage] = map[string]any{
			"input_tokens": comp.Usage.InputTokens, "output_tokens": comp.Usage.OutputTokens,
			"total_tokens": comp.Usage.TotalTokens,
		}
		if comp.Usage.CostUSD > 0 {
			m.Metadata[MetaUsage].(map[string]any)["cost_usd"] = comp.Usage.CostUSD
		}
	}
	if len(comp.ToolCalls) > 0 {
		calls := make([]any, len(comp.ToolCalls))
		for i, tc := range comp.ToolCalls {
			calls[i] = map[string]any{"id": tc.ID, "name": tc.Name, "arguments": copyMap(tc.Arguments)}
		}
		m.Metadata["tool_calls"] = calls
	}
	return m
}

// addUsage sums u into *total.
func addUsage(total **Usage, u *Usage) {
	if u == nil {
		return
	}
	if *total == nil {
		*total = &Usage{}
	}
	(*total).InputTokens += u.InputTokens
	(*total).OutputTokens += u.OutputTokens
	(*total).TotalTokens += u.TotalTokens
	(*total).CostUSD += u.CostUSD
}

// exchange runs one chat turn on b without recording it: it builds the
// instruction and the prompt and calls the chat model.
type exchange struct {
	branch *Branch
	data   *chatData
	chat   ModelRef
	parse  ModelRef
	ins    Message
	res    Message
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
	x := &exchange{branch: b, data: d}
	if x.chat, x.parse, err = d.models(b); err != nil {
		return nil, err
	}
	return x, nil
}

// run calls the chat model once with the branch history (or none, when
// clear_messages) followed by the instruction.
func (e *Engine) run(ctx context.Context, req Request, x *exchange) error {
	history := x.branch.Messages
	if x.data.ClearMessages {
		history = nil
	}
	x.ins = NewInstructionMessage(x.data.spec(), e.clock())
	msgs, err := e.prompt(x, history)
	if err != nil {
		return err
	}
	var comp *Completion
	if x.data.Stream {
		comp, err = e.streamExchange(ctx, req, x, msgs)
	} else {
		comp, err = e.complete(ctx, req, x.branch, x.chat, msgs, instructionText(x.ins.Content), x.calls, nativeTools(x.data.tools)...)
	}
	x.calls++
	if err != nil {
		return err
	}
	addUsage(&x.usage, comp.Usage)
	x.comp = comp
	x.res = e.assistantMessage(x.chat, comp)
	return nil
}

// chatVerb is chat: one unrecorded model call; the value is the text.
func (e *Engine) chatVerb(ctx context.Context, req Request) (*Result, error) {
	x, err := e.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := e.run(ctx, req, x); err != nil {
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
	if err := e.run(ctx, req, x); err != nil {
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

// commit appends the exchange's messages with its outcome (res, or the
// failure operr) as one EventMessages, then emits message.added signals.
// A concurrent duplicate (ErrAlreadyCommitted) is answered from history.
// A branch deleted during the operation fails it with CodeBranchNotFound;
// one deleted and created again under the same id receives the exchange
// (a limitation: stores append by branch id, not by branch incarnation).
func (e *Engine) commit(ctx context.Context, req Request, x *exchange, res *Result, operr *Error) (*Result, error) {
	ev := Event{Messages: []Message{x.ins, x.res}, Clear: x.data.ClearMessages, ModelCalls: x.calls}
	return e.commitEvent(ctx, req, x.branch.ID, ev, res, operr)
}

// commitEvent is commit for any operation: it appends ev (its Messages,
// Clear and ModelCalls; the rest is filled in) as the EventMessages of req
// on branchID, with the outcome, then emits message.added per message.
func (e *Engine) commitEvent(ctx context.Context, req Request, branchID string, ev Event, res *Result, operr *Error) (*Result, error) {
	outcome, err := encodeOutcome(res, operr)
	if err != nil {
		return nil, err
	}
	msgs := ev.Messages
	ev.Type, ev.RequestID, ev.Time, ev.BranchID, ev.Result = EventMessages, req.ID, e.clock(), branchID, outcome
	seq, dup, err := e.appendOnce(ctx, branchID, ev)
	if err != nil {
		return nil, err
	}
	if dup {
		return e.replayCommitted(ctx, req, seq, replayMessages)
	}
	for i := range msgs {
		e.emit(ctx, Signal{Type: SignalMessageAdded, Verb: req.Verb, BranchID: branchID, RequestID: req.ID, Message: &msgs[i]})
	}
	if operr != nil {
		return nil, operr
	}
	return res, nil
}

// appendOnce appends ev, an EventMessages of the request (or stage) id
// ev.RequestID, to branchID. When that id has committed already (a
// redelivery, or a concurrent copy that was first), it appends nothing and
// returns the sequence of the committed event with dup true. Store errors
// come back as the errors to answer with.
func (e *Engine) appendOnce(ctx context.Context, branchID string, ev Event) (seq uint64, dup bool, err error) {
	id := ev.RequestID
	nb, err := e.store.Append(ctx, branchID, ev)
	switch {
	case errors.Is(err, ErrAlreadyCommitted):
		ok := false
		if nb != nil {
			seq, ok = nb.Commits.Seq(id)
		}
		if !ok {
			if nb, err = e.load(ctx, branchID); err != nil {
				return 0, false, err
			}
			if seq, ok = nb.Commits.Seq(id); !ok {
				return 0, false, Errorf(CodeInternal, "request %q is reported committed on branch %q but is not in its commits", id, branchID)
			}
		}
		return seq, true, nil
	case errors.Is(err, ErrBranchNotFound):
		return 0, false, Errorf(CodeBranchNotFound, "branch %q was deleted during the request", branchID)
	case err != nil:
		return 0, false, storeErr("append", err)
	}
	return 0, false, nil
}

// committedError is the stored form of a recorded failure.
type committedError struct {
	Error *struct {
		Code    Code   `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func encodeOutcome(res *Result, operr *Error) (json.RawMessage, error) {
	if operr != nil {
		return marshalValue(map[string]any{"error": map[string]any{"code": operr.Code, "message": operr.Message}})
	}
	c := *res
	c.Replayed = false
	return marshalValue(c)
}

// replaySignals says which signals a replay emits again.
type replaySignals int

const (
	replayQuiet    replaySignals = iota // none: the caller emits what it must
	replayMessages                      // message.added for the recorded messages
	replayRun                           // run.start, message.added, then run.end or run.failed
)

// replayCommitted answers a request from its committed event at seq, and
// emits the signals the operation emitted when it ran (sig): a worker may
// have died after the commit and before them. Observers see them again
// with the same event ids (see ops.Signal), so a repeat is recognisable.
func (e *Engine) replayCommitted(ctx context.Context, req Request, seq uint64, sig replaySignals) (*Result, error) {
	return e.replayCommittedAfter(ctx, req, nil, seq, sig)
}

// replayCommittedAfter is replayCommitted for an operation that recorded
// the messages before in an earlier stage event (run's instruction): their
// message.added signals come first, as when it ran.
func (e *Engine) replayCommittedAfter(ctx context.Context, req Request, before []Message, seq uint64, sig replaySignals) (*Result, error) {
	ev, err := e.committedEvent(ctx, req.BranchID, req.ID, seq)
	if err != nil {
		return nil, err
	}
	res, oerr := committedOutcome(ev.Result, req)
	messagesAdded := func() {
		for _, msgs := range [][]Message{before, ev.Messages} {
			for i := range msgs {
				e.emit(ctx, Signal{Type: SignalMessageAdded, Verb: req.Verb, BranchID: req.BranchID, RequestID: req.ID, Message: &msgs[i]})
			}
		}
	}
	switch sig {
	case replayRun:
		// The same lifecycle as the run (none under a nested turn,
		// 0021-D4-04); a recorded failure is final, so it ends in
		// run.failed.
		return e.runLifecycle(ctx, req, req.BranchID, func() (*Result, error) {
			messagesAdded()
			return res, oerr
		})
	case replayMessages:
		messagesAdded()
	}
	return res, oerr
}

// committedEvent reads the event at seq of branchID's history, which the
// branch's commits say requestID recorded.
func (e *Engine) committedEvent(ctx context.Context, branchID, requestID string, seq uint64) (*Event, error) {
	evs, err := e.store.History(ctx, branchID, seq-1, 1)
	if err != nil {
		return nil, storeErr("history", err)
	}
	if len(evs) == 0 || evs[0].Seq != seq || evs[0].RequestID != requestID {
		return nil, Errorf(CodeInternal, "committed event %d of request %q not found in the history of branch %q", seq, requestID, branchID)
	}
	return &evs[0], nil
}

// committedOutcome decodes the outcome an EventMessages recorded: a
// result (marked Replayed) or a recorded failure.
func committedOutcome(raw json.RawMessage, req Request) (*Result, error) {
	var ce committedError
	if err := json.Unmarshal(raw, &ce); err == nil && ce.Error != nil {
		return nil, &Error{Code: ce.Error.Code, Message: ce.Error.Message}
	}
	var res Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, Errorf(CodeInternal, "committed result of request %q is unreadable: %v", req.ID, err)
	}
	res.Replayed = true
	if res.BranchID == "" {
		res.BranchID = req.BranchID
	}
	return &res, nil
}
