package ops

import (
	"context"
	"strings"

	"github.com/lionbus/lionbus/pkg/wire"
)

// maxInterpretHint is the longest domain or style hint interpret takes, in
// bytes.
const maxInterpretHint = 256

// interpretData is the request data of interpret ([wire.InterpretRequest]):
// the raw text to rewrite and the hints that shape the rewrite.
type interpretData struct {
	wire.InterpretRequest
}

// interpretInstruction is what interpret asks of the model.
const interpretInstruction = "Rewrite the user input given in the context into a prompt that a language model " +
	"or another system can act on without guessing: state the task plainly, make explicit what the input only " +
	"implies, and keep its structure easy to follow. Do not invent requirements, facts or steps the input does " +
	"not contain. Answer with the rewritten prompt and nothing else."

// check validates d.
func (d *interpretData) check() error {
	if strings.TrimSpace(d.Text) == "" {
		return Errorf(CodeInvalidRequest, "data.text is required and must not be blank")
	}
	return checkInterpretHints("", d.Domain, d.Style)
}

// checkInterpretHints refuses a domain or style hint longer than
// maxInterpretHint; prefix leads their names in the error
// ("data.<prefix>domain").
func checkInterpretHints(prefix, domain, style string) error {
	for _, h := range []struct{ name, v string }{{"domain", domain}, {"style", style}} {
		if len(h.v) > maxInterpretHint {
			return Errorf(CodeInvalidRequest, "data.%s%s is longer than %d bytes", prefix, h.name, maxInterpretHint)
		}
	}
	return nil
}

// chat returns the chat request that makes the rewrite.
func (d *interpretData) chat() *chatData {
	domain, style := d.Domain, d.Style
	if strings.TrimSpace(domain) == "" {
		domain = "general"
	}
	if strings.TrimSpace(style) == "" {
		style = "concise"
	}
	guidance := "Domain: " + domain + ". Style of the rewritten prompt: " + style + "."
	if d.SampleWriting != "" {
		guidance += "\nWrite in the manner of this sample:\n" + d.SampleWriting
	}
	model := d.InterpretModel
	if model == nil {
		model = d.ChatModel
	}
	c := &chatData{}
	c.Instruction, c.Guidance, c.Context, c.ChatModel = interpretInstruction, guidance, []any{"User input: " + d.Text}, model
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
