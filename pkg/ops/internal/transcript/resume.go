package transcript

import (
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/wire"
)

// AfterSession returns the messages of the history ms after the last one
// the provider session holds (marked by [Fold.MarkSession]): what a run
// resuming it has to send. With no marked message, nothing of ms is sent:
// the session holds what its runs recorded before messages were marked.
func AfterSession(ms []wire.Message, session string) []wire.Message {
	for i := len(ms) - 1; i >= 0; i-- {
		if id, _ := ms[i].Metadata[MetaSessionID].(string); id == session {
			return ms[i+1:]
		}
	}
	return nil
}

// WithoutMessage returns ms without the message id: the history a run's
// prompt is built from, without its own instruction, which a redelivered
// run finds recorded already and sends once, last. ms is returned as it
// is when it does not hold id (a first attempt: the prompt memo then
// sees the branch's own messages), resliced when id is its last message.
func WithoutMessage(ms []history.Message, id string) []history.Message {
	i := len(ms) - 1
	for i >= 0 && ms[i].ID != id {
		i--
	}
	switch {
	case i < 0:
		return ms
	case i == len(ms)-1:
		return ms[:i:i]
	}
	out := make([]history.Message, 0, len(ms)-1)
	return append(append(out, ms[:i]...), ms[i+1:]...)
}
