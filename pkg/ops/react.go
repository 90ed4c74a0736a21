package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/interpretprompt"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/ops/internal/reactprompt"
	"github.com/lionbus/lionbus/pkg/ops/provider"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Bounds of react's extension rounds.
const (
	// defaultReactExtensions is how many extension rounds react allows
	// when max_extensions is absent, streamed or not.
	defaultReactExtensions = 3
	// maxReactExtensions is the most extension rounds react runs: a
	// larger max_extensions is logged and lowered to it.
	maxReactExtensions = 100
)

// Stage names of react's sub-requests: "<id>/react/<round>" for the
// analysis rounds (0, 1, ...) and "<id>/react/answer" for the final one.
const (
	reactStage       = "react"
	reactAnswerStage = "answer"
)

// reactData is the request data of react ([wire.ReactRequest]). The
// instruction fields, the tools and the models are operate's; the rest
// steers the loop.
type reactData struct {
	wire.ReactRequest
}

// reactPlan is what react makes of its data.
type reactPlan struct {
	d          *reactData
	ins        instructData
	extensions int
	allowed    bool
	strategy   *string
}

// plan checks d and returns the loop's plan. Everything operate would
// refuse in a round is refused here too, before any model call.
func (d *reactData) plan(e *Engine, req Request) (*reactPlan, error) {
	ins, err := pickInstruct(d.Instruct, d.Instruction, d.Guidance, d.Context)
	if err != nil {
		return nil, err
	}
	if jsonval.IsEmpty(ins.Instruction) {
		return nil, Errorf(CodeInvalidRequest, "data.instruction is required (or data.instruct with an instruction)")
	}
	switch ins.Instruction.(type) {
	case string, map[string]any:
	default:
		return nil, Errorf(CodeInvalidRequest, "data.instruction must be a string or an object, not %T", ins.Instruction)
	}
	p := &reactPlan{d: d, ins: ins, extensions: defaultReactExtensions, allowed: true, strategy: ins.ActionStrategy}
	if d.ActionStrategy != nil && *d.ActionStrategy != "" {
		p.strategy = d.ActionStrategy
	}
	if p.strategy != nil && *p.strategy != "" && *p.strategy != strategyConcurrent && *p.strategy != strategySequential {
		return nil, Errorf(CodeInvalidRequest, "data.action_strategy must be %q or %q, not %q",
			strategyConcurrent, strategySequential, Truncate(*p.strategy, 64))
	}
	if d.ExtensionAllowed != nil {
		p.allowed = *d.ExtensionAllowed
	}
	// Default 3, none for zero or less, at most 100.
	if d.MaxExtensions != nil {
		switch n := *d.MaxExtensions; {
		case n <= 0:
			p.extensions = 0
		case n > maxReactExtensions:
			e.log.Warn().Str("request_id", req.ID).Int("max_extensions", n).
				Int("clamped_to", maxReactExtensions).Msg("max_extensions above the maximum")
			p.extensions = maxReactExtensions
		default:
			p.extensions = n
		}
	}
	if err := interpretprompt.CheckHints("interpret_", d.InterpretDomain, d.InterpretStyle); err != nil {
		return nil, err
	}
	return p, nil
}

// check refuses, before any model call, what operate would refuse in one
// of p's rounds on b: unknown tools, a bad response_format or policy.
func (p *reactPlan) check(b *history.Branch) error {
	if _, err := p.roundData(p.ins, p.strategy).plan(b); err != nil {
		return err
	}
	_, err := p.answerData("-").plan(b)
	return err
}

// roundData is the operate data of an analysis round.
func (p *reactPlan) roundData(ins instructData, strategy *string) *operateData {
	d := p.d
	on := true
	model := d.AnalysisModel
	if model == nil {
		model = d.ChatModel
	}
	od := &operateData{}
	od.Instruction, od.Guidance, od.Context, od.Reason = ins.Instruction, ins.Guidance, ins.Context, ins.Reason
	od.Sender, od.Recipient, od.ChatModel, od.ParseModel = d.Sender, d.Recipient, model, d.ParseModel
	od.NumParseRetries, od.ResponseFormat, od.Actions = d.NumParseRetries, reactprompt.AnalysisSchema, &on
	od.ActionStrategy, od.Tools, od.HandleValidation = strategy, d.Tools, handleRaise
	return od
}

// answerData is the operate data of the final round: no actions, the
// caller's response_format (text without one).
func (p *reactPlan) answerData(instruction string) *operateData {
	d := p.d
	od := &operateData{}
	od.Instruction, od.Sender, od.Recipient = instruction, d.Sender, d.Recipient
	od.ChatModel, od.ParseModel, od.NumParseRetries = d.ChatModel, d.ParseModel, d.NumParseRetries
	od.ResponseFormat, od.HandleValidation = d.ResponseFormat, d.HandleValidation
	return od
}

// react is the reason-and-act loop: an optional interpret of the
// instruction, an analysis round (an operate with actions), extension
// rounds while the model asks for them and the budget lasts, then a final
// operate for the answer. Every round goes through operateWith, so it is
// prepared, governed, acted on and recorded as an operate request, under
// the stage id "<id>/react/<round>" ("<id>/react/answer" for the last):
// a redelivered react is answered round by round from history.
//
// react owns the lifecycle: one run.start and one terminal signal; the
// rounds run under the nested-turn marker and emit none of their own. With
// stream, each round's value is published as a
// "round" chunk as it completes, and the result lists them all.
func (e *Engine) react(ctx context.Context, req Request) (*Result, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	var d reactData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	p, err := d.plan(e, req)
	if err != nil {
		return nil, err
	}
	b, err := e.load(ctx, req.BranchID)
	if err != nil {
		return nil, err
	}
	if err := p.check(b); err != nil {
		return nil, err
	}
	l := &reactLoop{e: e, req: req, branchID: b.ID, replayed: true}
	return e.runLifecycle(ctx, req, b.ID, func() (*Result, error) { return l.run(ctx, b, p) })
}

// reactLoop holds the state of one react.
type reactLoop struct {
	e        *Engine
	req      Request
	branchID string
	sink     ChunkSink
	usage    *Usage
	replayed bool
	stored   int64 // the rounds' recorded durations, for a replay
	analyses []json.RawMessage
}

// run runs p's rounds on b.
func (l *reactLoop) run(ctx context.Context, b *history.Branch, p *reactPlan) (res *Result, err error) {
	e, req := l.e, l.req
	t0 := e.clock()
	if p.d.Stream && e.chunks != nil {
		cs, oerr := e.openChunks(ctx, req, "react")
		if oerr != nil {
			return nil, oerr
		}
		l.sink = Sequence(cs)
		defer func() {
			if cerr := closeChunks(ctx, cs, "react"); cerr != nil && err == nil {
				res, err = nil, cerr
			}
		}()
	}
	nested := withNestedTurn(ctx)
	ins := p.ins
	if p.d.Interpret {
		if ins, err = l.interpret(nested, b, p); err != nil {
			return nil, err
		}
	}
	// Round 0, then the extensions (bounded by maxReactExtensions).
	a, err := l.analysisRound(nested, 0, p.roundData(ins, p.strategy))
	if err != nil {
		return nil, err
	}
	for left := p.extensions; p.allowed && a.ExtensionNeeded && left > 0; left-- {
		round := len(l.analyses)
		next := instructData{Instruction: reactprompt.Extension(a, round, left), Reason: p.ins.Reason}
		if a, err = l.analysisRound(nested, round, p.roundData(next, nextStrategy(a, p.strategy))); err != nil {
			return nil, err
		}
	}
	answer, err := l.round(nested, stageID(req.ID, reactStage+"/"+reactAnswerStage), p.answerData(reactprompt.Answer(p.ins.Instruction)))
	if err != nil {
		return nil, err
	}
	if err := l.emitRound(ctx, len(l.analyses), "answer", answer); err != nil {
		return nil, err
	}
	out := &Result{Value: answer, BranchID: b.ID, Usage: l.usage, Replayed: l.replayed}
	if p.d.ReturnAnalysis || p.d.Stream {
		if err := out.SetExtra(wire.ReactExtra{Analyses: l.analyses}); err != nil {
			return nil, Errorf(CodeInternal, "react: %v", err)
		}
	}
	if out.Replayed {
		out.DurationMS = l.stored
	} else {
		out.DurationMS = e.clock().Sub(t0).Milliseconds()
	}
	return out, nil
}

// interpret rewrites the instruction with interpret, unless round 0
// is committed already (a redelivery): the rewrite only shapes round 0,
// which is then answered from history, so the model is not called again.
func (l *reactLoop) interpret(ctx context.Context, b *history.Branch, p *reactPlan) (instructData, error) {
	ins, req := p.ins, l.req
	if _, done := b.Commits.Seq(stageID(l.roundID(0), "middle")); done {
		return ins, nil
	}
	text := jsonval.Text(ins.Instruction)
	ireq := Request{ID: stageID(req.ID, reactStage+"/interpret"), Verb: req.Verb, BranchID: b.ID, TraceParent: req.TraceParent, Attempt: req.Attempt}
	res, err := l.e.interpret(ctx, ireq, &interpretData{wire.InterpretRequest{
		Text: text, Domain: p.d.InterpretDomain, Style: p.d.InterpretStyle, SampleWriting: p.d.InterpretSample,
		InterpretModel: p.d.InterpretModel, ChatModel: p.d.ChatModel,
	}})
	if err != nil {
		return ins, err
	}
	var rewritten string
	if err := json.Unmarshal(res.Value, &rewritten); err != nil {
		return ins, Errorf(CodeInternal, "react: interpret value: %v", err)
	}
	if rewritten != "" {
		ins.Instruction = rewritten
	}
	return ins, nil
}

// roundID is the request id of analysis round n.
func (l *reactLoop) roundID(n int) string {
	return stageID(l.req.ID, reactStage+"/"+strconv.Itoa(n))
}

// round runs one operate under id and returns its value.
func (l *reactLoop) round(ctx context.Context, id string, d *operateData) (json.RawMessage, error) {
	sub := Request{ID: id, Verb: l.req.Verb, BranchID: l.branchID, TraceParent: l.req.TraceParent,
		Attempt: l.req.Attempt, LastAttempt: l.req.LastAttempt}
	res, err := l.e.operateWith(ctx, sub, d)
	if err != nil {
		return nil, err
	}
	provider.AddUsage(&l.usage, res.Usage)
	l.replayed = l.replayed && res.Replayed
	l.stored += res.DurationMS
	return res.Value, nil
}

// analysisRound runs analysis round n, keeps its value and streams it.
func (l *reactLoop) analysisRound(ctx context.Context, n int, d *operateData) (*reactprompt.Analysis, error) {
	v, err := l.round(ctx, l.roundID(n), d)
	if err != nil {
		return nil, err
	}
	var a reactprompt.Analysis
	if err := json.Unmarshal(v, &a); err != nil {
		return nil, Errorf(CodeSchemaRejected, "react round %d: the analysis is not an object of the analysis schema: %s",
			n, Truncate(string(v), maxMismatchQuote))
	}
	l.analyses = append(l.analyses, v)
	if err := l.emitRound(ctx, n, "analysis", v); err != nil {
		return nil, err
	}
	return &a, nil
}

// emitRound publishes a round's value as a round chunk, when streaming:
// metadata.round is its index, metadata.phase "analysis" or "answer",
// metadata.value the value; content is the analysis text, or the answer
// (as compact JSON unless it is text).
func (l *reactLoop) emitRound(ctx context.Context, n int, phase string, v json.RawMessage) error {
	if l.sink == nil {
		return nil
	}
	var value any
	if err := json.Unmarshal(v, &value); err != nil {
		return Errorf(CodeInternal, "react round %d value: %v", n, err)
	}
	content, isText := value.(string)
	if obj, ok := value.(map[string]any); ok && phase == "analysis" {
		content, isText = obj["analysis"].(string)
	}
	if !isText {
		content = string(v)
	}
	c := Chunk{Kind: ChunkRound, Content: content, Metadata: map[string]any{"round": n, "phase": phase, "value": value}}
	if err := l.sink.Emit(ctx, c); err != nil {
		return &Error{Code: CodeUnavailable, Temporary: true, Message: fmt.Sprintf("react: publish round %d: %v", n, err), Err: err}
	}
	return nil
}

// nextStrategy is the action strategy of the round after a: the one the
// analysis chose ("batch" runs concurrently, bounded by the engine's
// MaxConcurrentTools), else the request's.
func nextStrategy(a *reactprompt.Analysis, request *string) *string {
	if a.ActionStrategy == nil {
		return request
	}
	s := strategyConcurrent
	if *a.ActionStrategy == strategySequential {
		s = strategySequential
	}
	return &s
}
