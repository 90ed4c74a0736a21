// Package client connects to NATS and talks to lionbus workers. It depends
// on no NATS server and no worker code.
//
// [Connect] reaches any NATS server with user/password, token, nkey seed,
// creds file and TLS, reconnecting forever once connected.
//
// [Client] submits requests (the event id is also the JetStream message id,
// so a repeated Submit with the same id is stored once), waits for answers
// ([Client.Await] subscribes to lion.reply.<id> and also reads the results
// stream, so an answer stored earlier is not missed), reads a stored answer
// later ([Client.Result], within provision.Config.ResultsMaxAge) and cancels
// ([Client.Cancel]). A lionbus.error answer is a [Reply] whose Err is a
// *[RemoteError] with the stable code.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Defaults of [Config].
const (
	// DefaultTimeout bounds Submit, Result and Cancel when their
	// context has no deadline.
	DefaultTimeout = 10 * time.Second
	// DefaultAwaitTimeout bounds Await and Do when their context has no
	// deadline.
	DefaultAwaitTimeout = 2 * time.Minute
	// DefaultSource is the source attribute of submitted requests.
	DefaultSource = "/lionbus/client"
	// awaitRecheck is how often Await looks at the results stream again
	// while it waits, after the quicker first looks of awaitRechecks, in
	// case the answer was delivered while it subscribed.
	awaitRecheck = 2 * time.Second
	// maxAnswerSize is the largest answer the client decodes; the server's
	// max_payload is the real bound.
	maxAnswerSize = 64 << 20
)

// Sentinel errors of [Client].
var (
	// ErrNoResult is returned by Result when no answer is stored for the
	// request (not answered yet, unknown, or older than the results
	// stream keeps).
	ErrNoResult = errors.New("client: no result stored for the request")
	// ErrInvalidOption is returned (wrapped) for an invalid SubmitOption
	// or argument.
	ErrInvalidOption = errors.New("client: invalid option")
	// ErrInvalidConfig is returned (wrapped) by Connect for an unusable
	// ConnectConfig.
	ErrInvalidConfig = errors.New("client: invalid config")
)

// Config configures a [Client]. The zero value is usable.
type Config struct {
	// APIPrefix, when set, replaces "$JS.API" as the prefix of the
	// JetStream API requests that read stored answers ([Client.Result]):
	// the subject under which a tenant account imports the lionbus
	// account's results stream API (see deploy/README.md). "" means the
	// connection's own account's JetStream. It must be a literal subject
	// (a JetStream domain's "$JS.<domain>.API" is one).
	APIPrefix string
	// AwaitTimeout bounds Await and Do when ctx has no deadline.
	// Default DefaultAwaitTimeout.
	AwaitTimeout time.Duration
	// Prefix is the subject prefix. Default DefaultPrefix.
	Prefix string
	// Source is the source attribute of requests. Default
	// DefaultSource.
	Source string
	// Timeout bounds Submit, Result and Cancel when ctx has no deadline.
	// Default DefaultTimeout.
	Timeout time.Duration
}

// Client submits requests to lionbus workers and reads their answers. It
// is safe for concurrent use.
type Client struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	subj  protocol.Subjects
	cfg   Config
	codec *protocol.Codec

	mu      sync.Mutex
	streams map[string]jetstream.Stream // by name, looked up on first use
}

// NewClient returns a client using nc. It does not contact the server.
func New(nc *nats.Conn, cfg Config) (*Client, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: NewClient needs a connection", ErrInvalidOption)
	}
	if cfg.Timeout < 0 || cfg.AwaitTimeout < 0 {
		return nil, fmt.Errorf("%w: timeouts must not be negative", ErrInvalidOption)
	}
	subj, err := protocol.NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.AwaitTimeout == 0 {
		cfg.AwaitTimeout = DefaultAwaitTimeout
	}
	if cfg.Source == "" {
		cfg.Source = DefaultSource
	}
	var js jetstream.JetStream
	if cfg.APIPrefix != "" {
		// A JetStream domain's API ($JS.<domain>.API) is a $ subject.
		if err := literalPrefix("JetStream API prefix", strings.TrimPrefix(cfg.APIPrefix, "$")); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
		}
		js, err = jetstream.NewWithAPIPrefix(nc, cfg.APIPrefix)
	} else {
		js, err = jetstream.New(nc)
	}
	if err != nil {
		return nil, fmt.Errorf("client: jetstream: %w", err)
	}
	codec, err := protocol.NewCodec(protocol.CodecConfig{Prefix: subj.Prefix, MaxPayload: maxAnswerSize})
	if err != nil {
		return nil, err
	}
	return &Client{nc: nc, js: js, subj: subj, cfg: cfg, codec: codec}, nil
}

// SubmitOption changes how [Client.Submit] builds a request.
type SubmitOption func(*submitOptions) error

type submitOptions struct {
	id, replyTo, traceParent, source string
	mode                             protocol.Mode
	deadline                         time.Time
	parallel                         bool
}

// WithID sets the request id (default: a new UUID). Sending the same id
// twice runs the request once. It must be a valid subject token.
func WithID(id string) SubmitOption {
	return func(o *submitOptions) error {
		if !protocol.ValidToken(id) {
			return fmt.Errorf("%w: request id %q: want 1 to %d characters of [A-Za-z0-9_-]", ErrInvalidOption, id, protocol.MaxTokenLength)
		}
		o.id = id
		return nil
	}
}

// WithReplyTo asks for the answer on subject as well as on the default
// reply subject (where Await and Result read it). The subject must not be
// under the prefix (the worker refuses another request's reply subject with
// invalid_attribute); Submit checks this once the request id is known.
func WithReplyTo(subject string) SubmitOption {
	return func(o *submitOptions) error {
		if subject == "" || strings.ContainsAny(subject, " \t\r\n*>") {
			return fmt.Errorf("%w: reply subject %q is not a literal subject", ErrInvalidOption, subject)
		}
		o.replyTo = subject
		return nil
	}
}

// WithBinary sends the request in binary content mode (attributes as ce-
// headers, data as the body) instead of structured mode.
func WithBinary() SubmitOption {
	return func(o *submitOptions) error { o.mode = protocol.Binary; return nil }
}

// WithTraceParent sets the W3C traceparent of the request (default: a new
// trace).
func WithTraceParent(tp string) SubmitOption {
	return func(o *submitOptions) error {
		if !protocol.ValidTraceParent(tp) {
			return fmt.Errorf("%w: %q is not a W3C traceparent", ErrInvalidOption, tp)
		}
		o.traceParent = tp
		return nil
	}
}

// WithDeadline sets the request's deadline attribute: past it, the worker
// stops working on the request and answers it timeout.
func WithDeadline(t time.Time) SubmitOption {
	return func(o *submitOptions) error {
		if t.IsZero() {
			return fmt.Errorf("%w: zero deadline", ErrInvalidOption)
		}
		o.deadline = t
		return nil
	}
}

// WithParallel marks a request on a branch as independent of the
// branch's other requests (the branchorder attribute "parallel"): it does
// not wait for the requests of the branch that came before it, and they
// and later ones do not wait for it. It sees the branch as it was when it
// started, and its exchange is appended when it finishes. Meant for
// fan-outs whose requests only record into a shared branch.
func WithParallel() SubmitOption {
	return func(o *submitOptions) error {
		o.parallel = true
		return nil
	}
}

// WithSource sets the source attribute of the request.
func WithSource(source string) SubmitOption {
	return func(o *submitOptions) error {
		if source == "" {
			return fmt.Errorf("%w: empty source", ErrInvalidOption)
		}
		o.source = source
		return nil
	}
}

// Submit publishes a request for verb ("communicate", "branch.create",
// "op.NAME", ...) on branchID ("" for none) with data encoded as JSON (a
// json.RawMessage is sent as is; nil means {}), and returns its id once the
// ops stream stored it. The id is also the message id, so a repeated
// Submit with WithID is stored once. It returns ErrInvalidOption (wrapped)
// for a bad option or verb.
func (c *Client) Submit(ctx context.Context, verb, branchID string, data any, opts ...SubmitOption) (string, error) {
	o := submitOptions{source: c.cfg.Source, mode: protocol.Structured}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return "", err
		}
	}
	if !validVerb(verb) {
		return "", fmt.Errorf("%w: verb %q", ErrInvalidOption, verb)
	}
	ev, err := protocol.EventBuilder{Source: o.source}.Request(verb, branchID, o.replyTo, o.traceParent, data)
	if err != nil {
		return "", err
	}
	if o.id != "" {
		ev.SetID(o.id)
	}
	if !o.deadline.IsZero() {
		ev.SetExtension(protocol.ExtDeadline, o.deadline.UTC().Format(time.RFC3339Nano))
	}
	if o.parallel {
		ev.SetExtension(protocol.ExtBranchOrder, protocol.BranchOrderParallel)
	}
	if own := c.subj.Reply(ev.ID()); strings.HasPrefix(o.replyTo, c.subj.Prefix+".") && o.replyTo != own {
		return "", fmt.Errorf("%w: reply subject %q is inside %s.>; only the request's own %s may be used there", ErrInvalidOption, o.replyTo, c.subj.Prefix, own)
	}
	msg, err := protocol.Encode(c.subj.Op(verb), ev, o.mode)
	if err != nil {
		return "", err
	}
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	if _, err := c.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(c.subj.OpsStream())); err != nil {
		return "", fmt.Errorf("client: submit %s: %w", verb, err)
	}
	return ev.ID(), nil
}

// awaitRechecks are the first delays between looks at the results stream
// while Await waits (see wait).
var awaitRechecks = []time.Duration{5 * time.Millisecond, 25 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond}

// validVerb reports whether verb is one or more dot-separated tokens.
func validVerb(verb string) bool {
	if verb == "" {
		return false
	}
	for _, tok := range strings.Split(verb, ".") {
		if !protocol.ValidToken(tok) {
			return false
		}
	}
	return true
}

// Await waits for the answer of request id: its result or its lionbus.error
// event (see [Reply.Err]). An answer stored before Await was called is
// returned at once. When ctx has no deadline, AwaitTimeout applies.
func (c *Client) Await(ctx context.Context, id string) (*Reply, error) {
	if !protocol.ValidToken(id) {
		return nil, fmt.Errorf("%w: request id %q", ErrInvalidOption, id)
	}
	ctx, cancel := c.withTimeout(ctx, c.cfg.AwaitTimeout)
	defer cancel()
	w, err := c.watch(id)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	return c.wait(ctx, w, true)
}

// answerWatch is a subscription to a request's reply subject.
type answerWatch struct {
	id  string
	ch  chan *nats.Msg
	sub *nats.Subscription
}

func (w *answerWatch) stop() { _ = w.sub.Unsubscribe() }

// watch subscribes to the reply subject of id. It does not wait for the
// server to confirm the subscription: the server processes what one
// connection sends in order, so the subscription is in place before the
// request published after it (Do) or the look into the results stream
// that follows it (Await) is processed, and no answer can fall between
// the two.
func (c *Client) watch(id string) (*answerWatch, error) {
	w := &answerWatch{id: id, ch: make(chan *nats.Msg, 4)}
	var err error
	if w.sub, err = c.nc.ChanSubscribe(c.subj.Reply(id), w.ch); err != nil {
		return nil, fmt.Errorf("client: await %s: %w", id, err)
	}
	return w, nil
}

// wait returns the answer delivered to w or stored in the results
// stream. When early is true (the answer may be out already), it looks at
// the results stream at once and again after each of awaitRechecks: the
// server delivers an answer to subscribers before the results stream has
// stored it, so an answer delivered just before the subscription was
// registered is found stored a moment later. After that, and from the
// start when early is false, it looks every awaitRecheck, in case a
// delivery was missed (a reconnect).
//
// A look that cannot read the results stream (the server restarting, the
// stream being created again) does not end the wait: the subscription
// still waits, and the next look may read it. Should ctx end first, the
// error says why the last look failed.
func (c *Client) wait(ctx context.Context, w *answerWatch, early bool) (*Reply, error) {
	var lookErr error
	for i := 0; ; i++ {
		if early || i > 0 {
			r, err := c.Result(ctx, w.id)
			var le *lookupError
			switch {
			case err == nil:
				return r, nil
			case errors.As(err, &le) && ctx.Err() == nil:
				lookErr = err
			case !errors.Is(err, ErrNoResult):
				return nil, err
			}
		}
		next := awaitRecheck
		if early && i < len(awaitRechecks) {
			next = awaitRechecks[i]
		}
		t := time.NewTimer(next)
		select {
		case m := <-w.ch:
			t.Stop()
			return c.decodeReply(m.Header, m.Data)
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if lookErr != nil {
				return nil, fmt.Errorf("client: await %s: %w (last look: %w)", w.id, ctx.Err(), lookErr)
			}
			return nil, fmt.Errorf("client: await %s: %w", w.id, ctx.Err())
		}
	}
}

// lookupError is a failure to read the results stream (not a missing or
// undecodable answer).
type lookupError struct{ err error }

func (e *lookupError) Error() string { return e.err.Error() }
func (e *lookupError) Unwrap() error { return e.err }

// Result returns the stored answer of request id, or ErrNoResult.
func (c *Client) Result(ctx context.Context, id string) (*Reply, error) {
	if !protocol.ValidToken(id) {
		return nil, fmt.Errorf("%w: request id %q", ErrInvalidOption, id)
	}
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	m, err := c.lastMsg(ctx, c.subj.ResultsStream(), "results", c.subj.Reply(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, ErrNoResult
	}
	if err != nil {
		return nil, &lookupError{fmt.Errorf("client: result of %s: %w", id, err)}
	}
	return c.decodeReply(m.Header, m.Data)
}

// Do submits a request and waits for its answer. A lionbus.error answer is
// returned as a Reply, not an error: check [Reply.Err].
//
// Do subscribes to the answer before it submits the request, so it needs
// no look into the results stream unless the request id was given (with
// WithID) and may have been answered before.
func (c *Client) Do(ctx context.Context, verb, branchID string, data any, opts ...SubmitOption) (*Reply, error) {
	ctx, cancel := c.withTimeout(ctx, c.cfg.AwaitTimeout)
	defer cancel()
	_, w, given, err := c.submitWatched(ctx, verb, branchID, data, opts)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	return c.wait(ctx, w, given)
}

// submitWatched submits a request after subscribing to its answer, so that
// the answer cannot be missed; the caller stops the returned watch. It
// returns the request id (a new UUID unless opts gives one) also with an
// error after the options were read, and whether the id was given: only
// then may the request have been answered before, so that the results
// stream is worth a look at once.
func (c *Client) submitWatched(ctx context.Context, verb, branchID string, data any, opts []SubmitOption) (id string, w *answerWatch, given bool, err error) {
	var o submitOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return "", nil, false, err
		}
	}
	id, given = o.id, o.id != ""
	if !given {
		id = uuid.NewString()
		opts = append(opts, WithID(id))
	}
	if w, err = c.watch(id); err != nil {
		return id, nil, given, err
	}
	if _, err := c.Submit(ctx, verb, branchID, data, opts...); err != nil {
		w.stop()
		return id, nil, given, err
	}
	return id, w, given, nil
}

// Cancel asks the workers to cancel request id. A running request is
// answered with the code canceled; a request still queued is answered so
// when a worker picks it up (within RememberCancelFor). A request already
// answered is not affected.
func (c *Client) Cancel(ctx context.Context, id string) error {
	if !protocol.ValidToken(id) {
		return fmt.Errorf("%w: request id %q", ErrInvalidOption, id)
	}
	ctx, cancel := c.withTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	if err := c.nc.Publish(c.subj.Cancel(id), nil); err != nil {
		return fmt.Errorf("client: cancel %s: %w", id, err)
	}
	return c.nc.FlushWithContext(ctx)
}

// stream returns the handle of the stream name, looked up (a STREAM.INFO
// request) on first use only; what names the stream in errors. The lookup
// runs without the client's lock, so a slow one delays no other call;
// callers racing on the first use each look it up, and the first handle
// kept is the one used afterwards.
func (c *Client) stream(ctx context.Context, name, what string) (jetstream.Stream, error) {
	c.mu.Lock()
	st, ok := c.streams[name]
	c.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err := c.js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("client: %s stream %s: %w", what, name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.streams[name]; ok {
		return kept, nil
	}
	if c.streams == nil {
		c.streams = map[string]jetstream.Stream{}
	}
	c.streams[name] = st
	return st, nil
}

// lastMsg returns the last message of subject in the stream name (see
// stream for what). A read of a cached handle that finds no responders —
// the handle reads with direct gets, which the stream no longer allows
// since it was looked up — looks the stream up again and reads once more.
// A missing message is jetstream.ErrMsgNotFound, returned as it is.
func (c *Client) lastMsg(ctx context.Context, name, what, subject string) (*jetstream.RawStreamMsg, error) {
	st, err := c.stream(ctx, name, what)
	if err != nil {
		return nil, err
	}
	m, err := st.GetLastMsgForSubject(ctx, subject)
	if !errors.Is(err, nats.ErrNoResponders) {
		return m, err
	}
	c.mu.Lock()
	if c.streams[name] == st {
		delete(c.streams, name)
	}
	c.mu.Unlock()
	if st, err = c.stream(ctx, name, what); err != nil {
		return nil, err
	}
	return st.GetLastMsgForSubject(ctx, subject)
}

func (c *Client) decodeReply(h nats.Header, body []byte) (*Reply, error) {
	ev, err := c.codec.DecodeEvent(h, body)
	if err != nil {
		return nil, fmt.Errorf("client: decode answer: %w", err)
	}
	return &Reply{Event: *ev, Type: ev.Type(), Data: json.RawMessage(ev.Data())}, nil
}

// withTimeout applies d when ctx has no deadline.
func (c *Client) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// Reply is the answer to a request: a lionbus.<verb>.result event, or a
// lionbus.error event.
type Reply struct {
	// Event is the answer as received.
	Event event.Event
	// Type is the event type.
	Type string
	// Data is the event data: a wire.Result as JSON for a result, an
	// ErrorData for an error.
	Data json.RawMessage
}

// Err returns a *RemoteError for a lionbus.error answer, else nil.
func (r *Reply) Err() error {
	if r.Type != protocol.EventTypeError {
		return nil
	}
	var d protocol.ErrorData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return &RemoteError{Code: wire.CodeInternal, Message: "undecodable error event: " + err.Error()}
	}
	return &RemoteError{Code: d.Code, Message: d.Message, RequestID: d.RequestID}
}

// Result decodes the answer as a wire.Result; for an error answer it
// returns the *RemoteError.
func (r *Reply) Result() (*wire.Result, error) {
	if err := r.Err(); err != nil {
		return nil, err
	}
	var res wire.Result
	if err := json.Unmarshal(r.Data, &res); err != nil {
		return nil, fmt.Errorf("client: decode %s data: %w", r.Type, err)
	}
	return &res, nil
}

// RemoteError is a lionbus.error answer.
type RemoteError struct {
	// Code is the stable error code, one of [protocol.Codes].
	Code wire.Code
	// Message explains the failure.
	Message string
	// RequestID is the id of the failed request.
	RequestID string
}

// Error returns "lionbus: <code>: <message>".
func (e *RemoteError) Error() string { return fmt.Sprintf("lionbus: %s: %s", e.Code, e.Message) }

// Is matches the ops sentinels of the codes that have one
// (wire.ErrBranchNotFound, wire.ErrBranchExists) and ErrBadEvent for the
// codes of rejected input.
func (e *RemoteError) Is(target error) bool {
	switch target {
	case wire.ErrBranchNotFound:
		return e.Code == wire.CodeBranchNotFound
	case wire.ErrBranchExists:
		return e.Code == wire.CodeBranchExists
	case protocol.ErrBadEvent:
		return protocol.IsRejectionCode(e.Code)
	}
	return false
}

// Conn returns the connection the client uses.
func (c *Client) Conn() *nats.Conn { return c.nc }

// JetStream returns the client's JetStream context (with Config.APIPrefix,
// when set).
func (c *Client) JetStream() jetstream.JetStream { return c.js }

// Prefix returns the subject prefix the client uses.
func (c *Client) Prefix() string { return c.subj.Prefix }
