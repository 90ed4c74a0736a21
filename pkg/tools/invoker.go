package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// ErrNoService is matched (errors.Is) by the error of an invocation that no
// service answered: the tool is registered but no replica listens on its
// subject. It also matches wire.ErrNoService.
var ErrNoService = wire.ErrNoService

// ErrBadEntry is matched (errors.Is) by the error of an invocation whose
// registry entry names a subject the invoker refuses: a system subject or
// one of lionbus's own outside "<prefix>.tool.". No message is sent.
var ErrBadEntry = errors.New("tools: refused registry entry")

// DefaultInvokeTimeout bounds an invocation when neither the tool nor the
// call sets a timeout.
const DefaultInvokeTimeout = 30 * time.Second

// InvokerConfig configures an [Invoker].
type InvokerConfig struct {
	// Registry resolves a tool's subject; a tool it does not know is
	// ErrNoTool. Nil means every tool answers on "<prefix>.tool.<name>".
	Registry *Registry
	// Prefix is the subject prefix. "" means DefaultPrefix.
	Prefix string
	// Source is the source attribute of the invoke events. "" means
	// "/lionbus/worker".
	Source string
	// Timeout is the default bound of an invocation. 0 means
	// DefaultInvokeTimeout.
	Timeout time.Duration
	// Timeouts are per-tool bounds, replacing Timeout for the tools named.
	Timeouts map[string]time.Duration
}

// Invoker runs tool calls over NATS: it implements ops.Invoker by sending
// each call as a lionbus.tool.invoke request on the tool's subject and
// reading the lionbus.tool.result answer. Safe for concurrent use.
type Invoker struct {
	nc    *nats.Conn
	cfg   InvokerConfig
	subj  protocol.Subjects
	codec *protocol.Codec
}

// NewInvoker returns an invoker sending on nc. An error wraps
// ErrInvalidConfig.
func NewInvoker(nc *nats.Conn, cfg InvokerConfig) (*Invoker, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: no connection", ErrInvalidConfig)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.Source == "" {
		cfg.Source = "/lionbus/worker"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultInvokeTimeout
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: Timeout must not be negative", ErrInvalidConfig)
	}
	subj, err := protocol.NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	codec, err := protocol.NewCodec(protocol.CodecConfig{Prefix: cfg.Prefix})
	if err != nil {
		return nil, err
	}
	return &Invoker{nc: nc, cfg: cfg, subj: subj, codec: codec}, nil
}

type callTimeoutKey struct{}

// WithCallTimeout returns ctx carrying a timeout for the invocations made
// under it, replacing the tool's default one. The request's own deadline
// still applies: the earliest bound wins.
func WithCallTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, callTimeoutKey{}, d)
}

// DescribeTools describes the named tools from the registry (see
// [Registry.DescribeTools]); without a registry, by name alone.
func (i *Invoker) DescribeTools(ctx context.Context, names []string) []wire.ToolSpec {
	if i.cfg.Registry != nil {
		return i.cfg.Registry.DescribeTools(ctx, names)
	}
	out := make([]wire.ToolSpec, len(names))
	for k, n := range names {
		out[k] = wire.ToolSpec{Name: n}
	}
	return out
}

// deadline is the invocation's bound: now plus the call's timeout (the
// ctx override, else the tool's, else the default), never past
// call.Deadline or ctx's deadline.
func (i *Invoker) deadline(ctx context.Context, call wire.ToolInvocation) time.Time {
	d := i.cfg.Timeout
	if td, ok := i.cfg.Timeouts[call.Function]; ok && td > 0 {
		d = td
	}
	if cd, ok := ctx.Value(callTimeoutKey{}).(time.Duration); ok && cd > 0 {
		d = cd
	}
	dl := time.Now().Add(d)
	if !call.Deadline.IsZero() && call.Deadline.Before(dl) {
		dl = call.Deadline
	}
	if cdl, ok := ctx.Deadline(); ok && cdl.Before(dl) {
		dl = cdl
	}
	return dl
}

// Invoke sends call to its tool and waits for the answer until the
// invocation's deadline (see [WithCallTimeout]). It returns the tool's
// outcome, including an error the tool reported. Its error wraps
// wire.ErrNoTool when the registry has no such tool, ErrBadEntry when its
// entry names a subject the invoker refuses, ErrNoService when no service
// answers the tool's subject, context.DeadlineExceeded when the
// deadline passes first and context.Canceled when ctx is cancelled; in
// the last two cases the tool is sent a lionbus.tool.cancel event on
// CancelSubject of its subject, so that its handler stops. The invoke
// event carries ctx's traceparent (protocol.ContextWithTraceParent).
func (i *Invoker) Invoke(ctx context.Context, call wire.ToolInvocation) (wire.ToolOutcome, error) {
	subject := i.subj.Tool(call.Function)
	if i.cfg.Registry != nil {
		e, err := i.cfg.Registry.Lookup(ctx, call.Function)
		if err != nil {
			return wire.ToolOutcome{}, err
		}
		subject = e.Subject
		if !i.allowedSubject(subject) {
			return wire.ToolOutcome{}, fmt.Errorf("%w: tool %q: its registry entry names subject %q, which is lionbus's own or a system subject; a tool answers under %s.tool. or outside the prefix",
				ErrBadEntry, call.Function, wire.Truncate(subject, 80), i.cfg.Prefix)
		}
	} else if !wire.ValidID(call.Function) {
		return wire.ToolOutcome{}, fmt.Errorf("%w %q", wire.ErrNoTool, wire.Truncate(call.Function, wire.MaxIDLength))
	}
	dl := i.deadline(ctx, call)
	call.Deadline = dl.UTC()
	ctx, cancel := context.WithDeadline(ctx, dl)
	defer cancel()
	trace, _ := protocol.TraceParentFromContext(ctx)
	msg, err := encodeMsg(subject, i.cfg.Source, InvokeType, trace, call)
	if err != nil {
		return wire.ToolOutcome{}, err
	}
	reply, err := i.nc.RequestMsgWithContext(ctx, msg)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return wire.ToolOutcome{}, fmt.Errorf("%w: tool %q on %s", ErrNoService, call.Function, subject)
	case ctx.Err() != nil:
		i.sendCancel(subject, trace, call)
		return wire.ToolOutcome{}, fmt.Errorf("tools: tool %q: %w", call.Function, ctx.Err())
	case err != nil:
		return wire.ToolOutcome{}, fmt.Errorf("tools: tool %q: %w", call.Function, err)
	}
	out, err := decodeOutcome(i.codec, reply.Header, reply.Data)
	if err == nil && out.Error != nil && out.Error.Code == CodeTimeout && time.Until(dl) < deadlineSlack {
		// The service stopped the handler at this call's deadline and said
		// so just before the wait here ended: the same timeout, whichever
		// side noticed it first.
		return wire.ToolOutcome{}, fmt.Errorf("tools: tool %q: %w", call.Function, context.DeadlineExceeded)
	}
	return out, err
}

// deadlineSlack is how close to a call's deadline a service's timeout
// answer counts as that deadline passing (the two sides' clocks and the
// trip back).
const deadlineSlack = time.Second

// allowedSubject reports whether the invoker may send an invocation to
// subject: not a system subject ($JS, $KV, $SRV, ...) and not one of
// lionbus's own (requests, replies, history...) under the prefix.
func (i *Invoker) allowedSubject(subject string) bool {
	if strings.HasPrefix(subject, "$") || strings.HasPrefix(subject, "_INBOX.") {
		return false
	}
	p := i.cfg.Prefix + "."
	return !strings.HasPrefix(subject, p) || strings.HasPrefix(subject, p+"tool.")
}

// sendCancel tells the tool's service to stop the invocation; a failure
// to send is ignored (the tool's own deadline stops it anyway).
func (i *Invoker) sendCancel(subject, trace string, call wire.ToolInvocation) {
	msg, err := encodeMsg(CancelSubject(subject), i.cfg.Source, CancelType, trace,
		cancelData{IdempotencyKey: call.IdempotencyKey, RequestID: call.RequestID})
	if err == nil {
		_ = i.nc.PublishMsg(msg)
	}
}
