package ops

import (
	"encoding/json"
	"slices"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/internal/clirun"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
	"github.com/lionbus/lionbus/pkg/ops/internal/lndlmiddle"
	"github.com/lionbus/lionbus/pkg/ops/internal/schema"
	"github.com/lionbus/lionbus/pkg/ops/middle"
	"github.com/lionbus/lionbus/pkg/wire"
)

// operateData is the request data of operate (ADR-0022 D1): the wire's
// [wire.OperateRequest], whose field names are the ADR's parameter names
// of Branch.operate, and what operate reads as sent to refuse it with its
// own message.
type operateData struct {
	wire.OperateRequest

	// RoundBudget is read as sent, over the wire type's: a budget that is
	// not an integer from 1 to 10 gets round_budget's own error
	// (lndlmiddle.ParseRoundBudget), not the decoder's.
	RoundBudget json.RawMessage `json:"round_budget"`

	// Removed or refused names: present at all,
	// even null, they make the request invalid.
	RequestModel   json.RawMessage `json:"request_model"`
	OperativeModel json.RawMessage `json:"operative_model"`
	IModel         json.RawMessage `json:"imodel"`
	Operative      json.RawMessage `json:"operative"`
}

// instructData is the instruct object: the instruction with its own
// reason, actions and action_strategy.
type instructData = wire.Instruct

// operatePlan is what the preparer makes of operateData: the typed
// parameters of the stages (ADR-0022 D1's chat, parse and action
// parameters and coordinator flags).
type operatePlan struct {
	// chat is the middle's input, without the request fields (RequestID,
	// BranchID, Verb, Attempt) and without ResponseFormat and ToolSchemas,
	// which the generated schemas and the selected tools fill.
	chat MiddleInput
	// middle is the name of the middle to call.
	middle string
	// runParams is set when the request asks for run parameters
	// (stream_persist given): the default middle is then run_and_collect.
	runParams bool
	// format is the caller's response_format and its compiled form (the
	// outer validation target); nil for none.
	format    map[string]any
	validator *responseSchema
	// reason and actions ask for the generated fields; actions is the
	// instruction's flag, action whether the action stage exists.
	reason, actions bool
	action          *actParams
	// tools are the selected tool names; nil selects all the branch's.
	tools []string
	// fields are the named field_models, by name.
	fields map[string]map[string]any

	handle        string
	skip          bool
	invokeActions bool
}

// run returns the run_and_collect part of the middle's input, made on
// first use.
func (p *operatePlan) run() *RunInput {
	if p.chat.Run == nil {
		p.chat.Run = &RunInput{}
	}
	return p.chat.Run
}

// lndlInput returns the LNDL middle's part of the middle's input, made on
// first use.
func (p *operatePlan) lndlInput() *middle.LNDLInput {
	if p.chat.LNDL == nil {
		p.chat.LNDL = &middle.LNDLInput{}
	}
	return p.chat.LNDL
}

// removedNames are the removed names of operate and what to use instead.
var removedNames = []struct{ name, instead string }{
	{"request_model", "response_format (a JSON Schema)"},
	{"operative_model", "response_format (a JSON Schema)"},
	{"imodel", "chat_model"},
	{"operative", "response_format, reason, actions and field_models (operate builds its schemas itself)"},
}

// pickInstruct returns the instruction of a request that gives it either
// as one object (instruct) or as its fields, never both.
func pickInstruct(instruct *instructData, instruction, guidance, context any) (instructData, error) {
	if instruct == nil {
		return instructData{Instruction: instruction, Guidance: guidance, Context: context}, nil
	}
	if !jsonval.IsEmpty(instruction) || !jsonval.IsEmpty(guidance) || !jsonval.IsEmpty(context) {
		return instructData{}, Errorf(CodeInvalidRequest, "data.instruct and data.instruction, guidance or context exclude each other")
	}
	return *instruct, nil
}

// plan checks d and returns its plan. b is the branch, for the default
// chat model and the tools.
func (d *operateData) plan(b *history.Branch) (*operatePlan, error) {
	for i, raw := range []json.RawMessage{d.RequestModel, d.OperativeModel, d.IModel, d.Operative} {
		if raw != nil {
			r := removedNames[i]
			return nil, Errorf(CodeInvalidRequest, "data.%s is not accepted by operate; use %s", r.name, r.instead)
		}
	}
	ins, err := pickInstruct(d.Instruct, d.Instruction, d.Guidance, d.Context)
	if err != nil {
		return nil, err
	}
	// Explicit flags are written into the instruction.
	if d.Reason != nil && *d.Reason {
		ins.Reason = d.Reason
	}
	if d.Actions != nil && *d.Actions {
		ins.Actions = d.Actions
		if d.ActionStrategy != nil && *d.ActionStrategy != "" {
			ins.ActionStrategy = d.ActionStrategy
		}
	}
	p := &operatePlan{
		middle: d.Middle, handle: d.HandleValidation, skip: d.SkipValidation, invokeActions: true,
		reason: ins.Reason != nil && *ins.Reason, actions: ins.Actions != nil && *ins.Actions,
	}
	if p.middle == "" {
		p.middle = MiddleCommunicate
	}
	if d.InvokeActions != nil {
		p.invokeActions = *d.InvokeActions
	}
	switch p.handle {
	case "":
		p.handle = handleReturnValue
	case handleRaise, handleReturnValue, handleReturnNone:
	default:
		return nil, Errorf(CodeInvalidRequest, "data.handle_validation must be %q, %q or %q, got %q",
			handleRaise, handleReturnValue, handleReturnNone, Truncate(p.handle, 64))
	}
	if err := d.exchange(p, ins, b); err != nil {
		return nil, err
	}
	if err := d.runParams(p); err != nil {
		return nil, err
	}
	if err := d.lndl(p); err != nil {
		return nil, err
	}
	if err := p.actionStage(ins); err != nil {
		return nil, err
	}
	if err := d.selectTools(p, b); err != nil {
		return nil, err
	}
	fields, err := schema.FieldModels(d.FieldModels)
	if err != nil {
		return nil, err
	}
	p.fields = fields
	return p, nil
}

// exchange checks the instruction as communicate does and fills the
// middle's input with it and the models: the chat model defaults to the
// branch's, the parse model to the chosen chat model, not the branch's
// parse model. With no chat model at all the middle decides (communicate
// refuses).
func (d *operateData) exchange(p *operatePlan, ins instructData, b *history.Branch) error {
	ex := wire.CommunicateRequest{ChatRequest: d.ChatRequest, NumParseRetries: d.NumParseRetries, SkipValidation: d.SkipValidation, Stream: d.Stream}
	ex.Instruction, ex.Guidance, ex.Context = ins.Instruction, ins.Guidance, ins.Context
	chat := chatData{CommunicateRequest: ex}
	if err := chat.check(); err != nil {
		return err
	}
	p.format, p.validator = chat.schema, chat.validator
	cm, pm := d.ChatModel, d.ParseModel
	if cm == nil && b.Settings.ChatModel != nil {
		c := *b.Settings.ChatModel
		cm = &c
	}
	if pm == nil && cm != nil {
		c := *cm
		pm = &c
	}
	// The middle is asked for the generated request schema (middleInput),
	// not the caller's format.
	ex.ResponseFormat = nil
	ex.ChatModel, ex.ParseModel = cm, pm
	p.chat = MiddleInput{CommunicateRequest: ex}
	return nil
}

// runParams hands run_and_collect the run parameters: stream_persist,
// copied as given (false included; present at all, it asks for run
// parameters), and stream_persist_dir, checked here, before the lifecycle
// starts or anything is stored (the run resolves the default).
func (d *operateData) runParams(p *operatePlan) error {
	if d.StreamPersist != nil {
		p.run().StreamPersist = *d.StreamPersist
		p.runParams = true
	}
	if d.StreamPersistDir != nil {
		if err := clirun.CheckLogDirField("data.stream_persist_dir", p.run().StreamPersist, *d.StreamPersistDir); err != nil {
			return err
		}
		p.run().StreamPersistDir = *d.StreamPersistDir
	}
	return nil
}

// actionStage makes the action stage, which exists with invoke_actions
// and actions enabled; its strategy is the request's, else the
// instruction's, else concurrent; errors are always suppressed.
func (p *operatePlan) actionStage(ins instructData) error {
	if !p.invokeActions || !p.actions {
		return nil
	}
	ap := actParams{suppress: true}
	if s := ins.ActionStrategy; s != nil && *s != "" {
		seq, err := sequential("data.action_strategy", *s)
		if err != nil {
			return err
		}
		ap.sequential = seq
	}
	p.action = &ap
	return nil
}

// selectTools checks the selected tools, each one of the branch's; the
// LNDL middle's actions are narrowed to them too.
func (d *operateData) selectTools(p *operatePlan, b *history.Branch) error {
	if d.Tools == nil {
		return nil
	}
	for i, t := range d.Tools {
		if !slices.Contains(b.Settings.Tools, t) {
			return Errorf(CodeInvalidRequest, "data.tools[%d] %q is not one of the branch's tools %v", i, Truncate(t, MaxIDLength), b.Settings.Tools)
		}
	}
	p.tools = slices.Clone(d.Tools)
	if p.middle == MiddleLNDL {
		p.lndlInput().Tools = slices.Clone(d.Tools)
	}
	return nil
}

// stageID derives the request id of one of operate's stages from the
// request id, the same on every delivery.
func stageID(requestID, stage string) string { return requestID + "/" + stage }

// lndl checks round_budget and hands the LNDL middle its inputs: the
// budget (only "middle": "lndl" takes one) and the caller's
// response_format as sent, for its field order.
func (d *operateData) lndl(p *operatePlan) error {
	if d.RoundBudget != nil {
		if p.middle != MiddleLNDL {
			return Errorf(CodeInvalidRequest, "data.round_budget is for \"middle\": %q only", MiddleLNDL)
		}
		n, err := lndlmiddle.ParseRoundBudget(d.RoundBudget)
		if err != nil {
			return err
		}
		p.lndlInput().RoundBudget = n
	}
	if p.middle == MiddleLNDL && len(d.ResponseFormat) > 0 {
		p.lndlInput().CallerFormat = d.ResponseFormat
	}
	return nil
}
