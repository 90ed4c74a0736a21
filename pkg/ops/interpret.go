package ops

import (
	"context"
	"strings"

	"github.com/lionbus/lionbus/pkg/ops/internal/interpretprompt"
	"github.com/lionbus/lionbus/pkg/wire"
)

// interpretData is the request data of interpret ([wire.InterpretRequest]):
// the raw text to rewrite and the hints that shape the rewrite.
type interpretData struct {
	wire.InterpretRequest
}

// check validates d.
func (d *interpretData) check() error {
	if strings.TrimSpace(d.Text) == "" {
		return Errorf(CodeInvalidRequest, "data.text is required and must not be blank")
	}
	return interpretprompt.CheckHints("", d.Domain, d.Style)
}

// chat returns the chat request that makes the rewrite.
func (d *interpretData) chat() *chatData {
	model := d.InterpretModel
	if model == nil {
		model = d.ChatModel
	}
	c := &chatData{}
	c.Instruction, c.Guidance, c.ChatModel = interpretprompt.Instruction, interpretprompt.Guidance(d.Domain, d.Style, d.SampleWriting), model
	c.Context = []any{"User input: " + d.Text}
	return c
}

// interpretVerb is interpret: one unrecorded call of the chat model (or
// interpret_model) that rewrites data.text into a clearer prompt for a
// later operation. The value is the rewritten prompt, trimmed of
// surrounding white space. Like chat, it records nothing on the branch
// and emits no signal.
func (e *Engine) interpretVerb(ctx context.Context, req Request) (*Result, error) {
	if err := requireBranchID(req); err != nil {
		return nil, err
	}
	var d interpretData
	if err := decodeData(req.Data, &d); err != nil {
		return nil, err
	}
	return e.interpret(ctx, req, &d)
}

// interpret runs the rewrite of d for req: the verb's path, and react's
// first step when it asks for one.
func (e *Engine) interpret(ctx context.Context, req Request, d *interpretData) (*Result, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	x, err := e.prepareData(ctx, req, d.chat())
	if err != nil {
		return nil, err
	}
	if err := x.call(ctx, req); err != nil {
		return nil, err
	}
	v, err := marshalValue(strings.TrimSpace(x.comp.Text))
	if err != nil {
		return nil, err
	}
	return &Result{Value: v, BranchID: x.branch.ID, Usage: x.usage}, nil
}
