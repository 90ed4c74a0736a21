package ops

import (
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/prompt"
)

// DefaultMaxPromptBytes is the default bound of one model call's prompt
// text (Config.MaxPromptBytes): 32 MiB, far above what any model's context
// takes, so that only a branch grown without bound meets it.
const DefaultMaxPromptBytes = 32 << 20

// Prompt is the outgoing conversation of a model call ([prompt.Prompt]).
type Prompt = prompt.Prompt

// ChatMessage is one outgoing message of a model call ([prompt.Message]).
type ChatMessage = prompt.Message

// PromptOf returns the prompt of msgs, copied ([prompt.Of]).
func PromptOf(msgs ...ChatMessage) Prompt { return prompt.Of(msgs...) }

// prompt builds the prompt of x's model call, history then x.ins (see
// prompt.Memo), and refuses one of more than the engine's MaxPromptBytes.
func (x *exchange) prompt(history []history.Message) (Prompt, error) {
	e := x.e
	msgs := e.prompts.Build(x.branch.ID, x.branch.Settings.System, history, x.ins)
	if err := checkPrompt(x.branch.ID, msgs, e.maxPrompt); err != nil {
		return Prompt{}, err
	}
	return msgs, nil
}

// checkPrompt refuses a prompt of more than max bytes of text: the branch is
// too long to be sent as one conversation.
func checkPrompt(branch string, msgs Prompt, max int) error {
	if n := msgs.Bytes(); n > max {
		return Errorf(CodeInvalidRequest, "branch %s is too long for one model call: its prompt is %d bytes, over the bound of %d; send clear_messages, or clear or clone the branch", branch, n, max)
	}
	return nil
}
