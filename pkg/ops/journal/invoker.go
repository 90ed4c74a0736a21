package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/lionbus/lionbus/pkg/ops"
)

// WrapInvoker returns an invoker that journals every outcome of next (an
// output or an error the tool reported) before returning it, and answers
// a call of a redelivered request (ops.Attempt above 1) whose outcome is
// journaled from the journal without invoking the tool. So a tool runs once per call of an operation even when its
// service does not remember results by idempotency key itself (one not
// built on the Go or TypeScript SDK), as long as the call completed before
// the worker died. An invoker failure (no tool, no service, a timeout) is
// not journaled. A next that describes its tools (ops.ToolDescriber) gives
// an invoker that does.
func WrapInvoker(next ops.Invoker, cfg Config) ops.Invoker {
	inv := &invoker{next: next, cfg: cfg}
	if d, ok := next.(ops.ToolDescriber); ok {
		return &describingInvoker{invoker: inv, d: d}
	}
	return inv
}

type invoker struct {
	next ops.Invoker
	cfg  Config
}

type describingInvoker struct {
	*invoker
	d ops.ToolDescriber
}

// DescribeTools describes the tools as the wrapped invoker does.
func (i *describingInvoker) DescribeTools(ctx context.Context, names []string) []ops.ToolSpec {
	return i.d.DescribeTools(ctx, names)
}

// Invoke answers from the journal when the call's outcome is there, else
// invokes the tool and journals its outcome.
func (i *invoker) Invoke(ctx context.Context, call ops.ToolInvocation) (ops.ToolOutcome, error) {
	key := ToolKey(call)
	var out ops.ToolOutcome
	if ops.Attempt(ctx) > 1 && get(ctx, i.cfg, key, &out) {
		return out, nil
	}
	out, err := i.next.Invoke(ctx, call)
	if err != nil {
		return out, err
	}
	put(ctx, i.cfg, key, out)
	return out, nil
}

// ToolKey is the journal key of a tool call: its request id, ".tool.", and
// 32 hex digits of a SHA-256 over its idempotency key, tool name and
// arguments, so that an entry answers only the very call that made it.
func ToolKey(call ops.ToolInvocation) string {
	h := sha256.New()
	field(h, []byte(call.IdempotencyKey))
	field(h, []byte(call.Function))
	args, _ := json.Marshal(call.Arguments) // map keys sorted
	field(h, args)
	return call.RequestID + ".tool." + hex.EncodeToString(h.Sum(nil)[:16])
}
