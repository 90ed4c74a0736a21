package protocol

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Mode is a CloudEvents content mode on NATS.
type Mode int

// Content modes. Batch mode is not defined for NATS.
const (
	// Structured: the body is the JSON event format, with header
	// Content-Type: application/cloudevents+json.
	Structured Mode = iota
	// Binary: every attribute is a ce-<name> header, the body is the data.
	Binary
)

// String returns "structured" or "binary".
func (m Mode) String() string {
	switch m {
	case Structured:
		return "structured"
	case Binary:
		return "binary"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Header names and values of the CloudEvents NATS binding.
const (
	// ContentTypeCloudEventsJSON marks a structured-mode message.
	ContentTypeCloudEventsJSON = "application/cloudevents+json"
	// ContentTypeJSON is the datacontenttype of every lionbus event.
	ContentTypeJSON = "application/json"
	// ContentTypeHeader is the NATS header that selects structured mode.
	ContentTypeHeader = "Content-Type"
	// AttrHeaderPrefix starts the header of each attribute in binary mode.
	// It is written in lower case and read case-insensitively.
	AttrHeaderPrefix = "ce-"
)

// Extension attributes used by lionbus.
const (
	// ExtBranchID names the branch of a branch-scoped request and of every
	// event about that branch.
	ExtBranchID = "branchid"
	// ExtReplyTo is the subject a request's answer is published to
	// (default <prefix>.reply.<id>). A subject under the prefix is refused
	// unless it is that default: another <prefix>.reply.<x> would replace
	// the stored answer of request x.
	ExtReplyTo = "replyto"
	// ExtTraceParent is the W3C traceparent (distributed-tracing extension).
	ExtTraceParent = "traceparent"
	// ExtTraceState is the W3C tracestate (distributed-tracing extension).
	ExtTraceState = "tracestate"
	// ExtRequestID is set on results and errors to the id of the request
	// they answer, so that answers sent to a shared replyto can be matched.
	ExtRequestID = "requestid"
	// ExtDeadline is the time (RFC 3339) after which a request is of no
	// use to its client: work on it stops and it is answered timeout.
	ExtDeadline = "deadline"
	// ExtBranchOrder is how a request on a branch is ordered with the
	// branch's other requests: BranchOrderOrdered (the default: one at a
	// time, in arrival order, each seeing the ones before) or
	// BranchOrderParallel (it neither waits for them nor makes them wait;
	// it sees the branch as it was when it started, and its exchange is
	// appended when it finishes).
	ExtBranchOrder = "branchorder"
)

// The values of the branchorder attribute.
const (
	BranchOrderOrdered  = "ordered"
	BranchOrderParallel = "parallel"
)

// EventTypePrefix starts every lionbus event type.
const EventTypePrefix = "lionbus."

// ErrEncode is returned (wrapped) by Encode for an event that cannot be
// encoded.
var ErrEncode = errors.New("protocol: cannot encode event")

// maxReplyToLength bounds the replyto attribute.
const maxReplyToLength = 256

// Request is a decoded and validated operation request.
type Request struct {
	// Event is the CloudEvent as received.
	Event event.Event
	// Verb is the operation, e.g. "communicate", "branch.create", "op.NAME".
	Verb string
	// BranchID is the branchid attribute ("" when absent; then the verb is
	// not branch-scoped).
	BranchID string
	// ReplyTo is where the answer goes: the replyto attribute when given,
	// else the default reply subject <prefix>.reply.<id>.
	ReplyTo string
	// TraceParent is the trace context to propagate: the traceparent
	// extension, else the plain traceparent header, else a new one (see
	// NewTraceParent). It is never empty.
	TraceParent string
	// TraceState is the W3C tracestate that came with TraceParent, if any.
	TraceState string
	// Data is the request data, valid against its schema. An event without
	// data has the data {}.
	Data json.RawMessage
	// Deadline is the deadline attribute, the zero time when absent.
	Deadline time.Time
	// Parallel reports a branchorder attribute of BranchOrderParallel.
	Parallel bool
}

// ID returns the request id (the event id).
func (r *Request) ID() string { return r.Event.ID() }

// BranchScoped reports whether verb acts on an existing branch and so needs
// the branchid attribute: every verb except branch.create (which may name
// the new branch in its data), chat (which, without a branch, runs on an
// empty one that is never stored), branch.list (which names no branch)
// and named operations op.NAME (for which the branch is optional).
func BranchScoped(verb string) bool {
	return verb != "branch.create" && verb != "chat" && verb != "branch.list" && !strings.HasPrefix(verb, "op.")
}

// Codec decodes and validates CloudEvents received over NATS. It is safe for
// concurrent use.
type Codec struct {
	maxPayload int
	subjects   Subjects
	validator  Validator
}

// Validator checks the data of a request against the JSON Schema of its
// event type. [Codec.DecodeRequest] needs one; nothing else of the codec
// does, so that programs that only build and read events (clients, tool
// services) link no schema compiler. Package schemas provides the one a
// worker uses (schemas.Validator).
type Validator interface {
	// Has reports whether eventType has a schema.
	Has(eventType string) bool
	// Validate returns nil when data (JSON) matches the schema of
	// eventType, else an error. An error with a method
	// Where() (pointer, reason string) is answered as "data at <pointer>:
	// <reason>", any other as "data: <error>".
	Validate(eventType string, data []byte) error
}

// ErrNoValidator is the message of the internal *EventError DecodeRequest
// returns when its codec has no Validator.
var ErrNoValidator = errors.New("protocol: the codec has no Validator: it cannot decode requests")

// DefaultMaxPayload is the default size limit of a request, in bytes,
// headers and body counted: 1 MiB.
const DefaultMaxPayload = 1 << 20

// CodecConfig configures a [Codec]. The zero value is usable.
type CodecConfig struct {
	// Prefix is the subject prefix. Default DefaultPrefix.
	Prefix string
	// MaxPayload is the largest request accepted, in bytes, headers and
	// body counted; larger ones are rejected with payload_too_large.
	// Default DefaultMaxPayload.
	MaxPayload int
	// Validator checks the data of decoded requests; nil means a codec that
	// does not decode requests (DecodeRequest refuses every one).
	Validator Validator
}

// ErrInvalidConfig is returned (wrapped) by NewCodec for an unusable
// [CodecConfig].
var ErrInvalidConfig = errors.New("protocol: invalid config")

// NewCodec returns a codec enforcing cfg.MaxPayload and reading request
// subjects under cfg.Prefix, or ErrInvalidConfig.
func NewCodec(cfg CodecConfig) (*Codec, error) {
	if cfg.MaxPayload == 0 {
		cfg.MaxPayload = DefaultMaxPayload
	}
	if cfg.MaxPayload < 0 {
		return nil, fmt.Errorf("%w: MaxPayload must be positive, got %d", ErrInvalidConfig, cfg.MaxPayload)
	}
	subj, err := NewSubjects(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return &Codec{maxPayload: cfg.MaxPayload, subjects: subj, validator: cfg.Validator}, nil
}

// MaxPayload returns the size limit in bytes (headers and body).
func (c *Codec) MaxPayload() int { return c.maxPayload }

// Subjects returns the subject names the codec uses.
func (c *Codec) Subjects() Subjects { return c.subjects }

// Decode decodes any CloudEvent from msg (see DecodeEvent).
func (c *Codec) Decode(msg *nats.Msg) (*event.Event, error) {
	return c.DecodeEvent(msg.Header, msg.Data)
}

// DecodeEvent decodes a CloudEvent from a message's headers and body. The
// mode follows the interoperable rule: a ce-specversion header (any case)
// means binary; otherwise a Content-Type starting with
// application/cloudevents, a JSON Content-Type (application/json, what most
// JSON clients send), or no Content-Type at all (what `nats pub` sends),
// means structured; any other Content-Type means binary. It checks
// the size limit before parsing, the required attributes (id, source, type,
// specversion) and that specversion is "1.0". Errors are *EventError.
func (c *Codec) DecodeEvent(h nats.Header, body []byte) (*event.Event, error) {
	ev, _, eerr := c.decode(h, body)
	if eerr != nil {
		return nil, eerr
	}
	return ev, nil
}

// DecodeRequest decodes and validates a request received on msg.Subject:
// everything DecodeEvent checks, then that the type is
// lionbus.<verb>.request for a known verb (one with a request schema, or
// op.NAME for a valid NAME) equal to the verb of the subject
// <prefix>.ops.<verb>; that the id is a valid subject token; that branchid,
// when present, is valid (and present for BranchScoped verbs); that replyto,
// when present, is a literal subject outside the service's own streams; and
// that data is JSON matching the request schema. Errors are *EventError,
// carrying whatever of id and reply subject could be read.
func (c *Codec) DecodeRequest(msg *nats.Msg) (*Request, error) {
	return c.decodeRequest(msg.Subject, msg.Header, msg.Data)
}

// DecodeRequestJS is DecodeRequest for a message fetched from a JetStream
// consumer.
func (c *Codec) DecodeRequestJS(msg jetstream.Msg) (*Request, error) {
	return c.decodeRequest(msg.Subject(), msg.Headers(), msg.Data())
}

// partial holds what could be read of a message even when decoding fails.
type partial struct {
	id, replyTo, branchID, traceParent string
}

func (c *Codec) decodeRequest(subject string, h nats.Header, body []byte) (*Request, error) {
	ev, p, eerr := c.decode(h, body)
	r, eerr := c.request(subject, h, ev, p, eerr)
	if eerr != nil {
		c.fillAnswer(eerr, p)
		return nil, eerr
	}
	return r, nil
}

// fillAnswer sets the fields of e that make it answerable.
func (c *Codec) fillAnswer(e *EventError, p partial) {
	if ValidToken(p.id) {
		e.ID = p.id
	}
	switch {
	case p.replyTo != "" && c.validReplyTo(p.replyTo, e.ID) == "":
		e.ReplyTo = p.replyTo
	case e.ID != "":
		// No replyto, or one that must not be used: the answer is stored
		// under the request's own reply subject only.
		e.ReplyTo = c.subjects.Reply(e.ID)
	}
	if ValidToken(p.branchID) {
		e.BranchID = p.branchID
	}
	if ValidTraceParent(p.traceParent) {
		e.TraceParent = p.traceParent
	}
}

func (c *Codec) request(subject string, h nats.Header, ev *event.Event, p partial, eerr *EventError) (*Request, *EventError) {
	if eerr != nil {
		return nil, eerr
	}
	id := ev.ID()
	if !ValidToken(id) {
		return nil, eventErrorf(CodeInvalidAttribute,
			"id %q is not usable as a request id: want 1 to %d characters of [A-Za-z0-9_-]", clip(id), MaxTokenLength)
	}
	// Extensions returns a copy of the map: read it once.
	exts := ev.Extensions()
	if v, ok := exts[ExtReplyTo]; ok {
		if _, isString := v.(string); !isString {
			return nil, eventErrorf(CodeInvalidAttribute, "replyto must be a string subject, got %v", v)
		}
	}
	if p.replyTo != "" {
		if why := c.validReplyTo(p.replyTo, id); why != "" {
			return nil, eventErrorf(CodeInvalidAttribute, "replyto %q %s", clip(p.replyTo), why)
		}
	}

	typ := ev.Type()
	verb, ok := strings.CutPrefix(typ, EventTypePrefix)
	if ok {
		verb, ok = strings.CutSuffix(verb, ".request")
	}
	if !ok || verb == "" {
		return nil, eventErrorf(CodeUnknownType, "type %q is not a request type lionbus.<verb>.request", clip(typ))
	}
	if name, isOp := strings.CutPrefix(verb, "op."); isOp && !ValidToken(name) {
		return nil, eventErrorf(CodeUnknownType,
			"type %q: operation name %q must be 1 to %d characters of [A-Za-z0-9_-]", clip(typ), clip(name), MaxTokenLength)
	}
	if c.validator == nil {
		return nil, &EventError{Code: wire.CodeInternal, Message: ErrNoValidator.Error()}
	}
	if !c.validator.Has(typ) {
		return nil, eventErrorf(CodeUnknownType, "type %q: unknown verb %q", clip(typ), clip(verb))
	}
	opsPrefix := c.subjects.Op("")
	subjVerb, ok := strings.CutPrefix(subject, opsPrefix)
	if !ok {
		return nil, eventErrorf(CodeUnknownType, "subject %q is not a request subject %s<verb>", clip(subject), opsPrefix)
	}
	if subjVerb != verb {
		return nil, eventErrorf(CodeUnknownType, "type %q does not match subject %q: publish it to %s", typ, clip(subject), c.subjects.Op(verb))
	}

	r := &Request{Event: *ev, Verb: verb}
	if v, ok := exts[ExtBranchID]; ok {
		s, isString := v.(string)
		if !isString || !ValidToken(s) {
			return nil, eventErrorf(CodeInvalidBranchID,
				"branchid %s is not valid: want 1 to %d characters of [A-Za-z0-9_-]", clip(fmt.Sprintf("%#v", v)), MaxTokenLength)
		}
		r.BranchID = s
	} else if BranchScoped(verb) {
		return nil, eventErrorf(CodeMissingBranchID, "verb %s needs the branchid attribute", verb)
	}
	r.ReplyTo = p.replyTo
	if r.ReplyTo == "" {
		r.ReplyTo = c.subjects.Reply(id)
	}
	if v, ok := exts[ExtDeadline]; ok {
		var err error
		if r.Deadline, err = deadlineOf(v); err != nil {
			return nil, eventErrorf(CodeMalformedEvent, "deadline %s is not an RFC 3339 time", clip(fmt.Sprintf("%v", v)))
		}
	}
	if v, ok := exts[ExtBranchOrder]; ok {
		switch v {
		case BranchOrderOrdered:
		case BranchOrderParallel:
			r.Parallel = true
		default:
			return nil, eventErrorf(CodeInvalidAttribute, "branchorder %s is not %q or %q", clip(fmt.Sprintf("%#v", v)), BranchOrderOrdered, BranchOrderParallel)
		}
	}
	switch {
	case ValidTraceParent(p.traceParent):
		r.TraceParent = p.traceParent
		r.TraceState, _ = exts[ExtTraceState].(string)
	case ValidTraceParent(h.Get(TraceParentHeader)):
		r.TraceParent = h.Get(TraceParentHeader)
		r.TraceState = h.Get(TraceStateHeader)
	default:
		r.TraceParent = NewTraceParent()
	}

	if ct := ev.DataContentType(); ct != "" && !isJSONContentType(ct) {
		return nil, eventErrorf(CodeInvalidData, "datacontenttype %q is not JSON", clip(ct))
	}
	data := ev.Data()
	if len(data) == 0 {
		data = []byte("{}")
	}
	if err := c.validator.Validate(typ, data); err != nil {
		var ve interface{ Where() (string, string) }
		if errors.As(err, &ve) {
			ptr, reason := ve.Where()
			if ptr == "" {
				ptr = "/"
			}
			return nil, eventErrorf(CodeInvalidData, "data at %s: %s", ptr, reason)
		}
		return nil, eventErrorf(CodeInvalidData, "data: %v", err)
	}
	r.Data = json.RawMessage(data)
	return r, nil
}

// validReplyTo returns "" when s may be used as the reply subject of
// request id, else why not. A reply subject is a literal subject (no
// wildcards, spaces or empty tokens), at most 256 bytes, not a system
// subject ($...), and under the prefix only as the request's own
// <prefix>.reply.<id>, so that an answer can never land in the request,
// history, events, chunk, tool or cancel subjects, nor replace the stored
// answer of another request (the results stream keeps one message per
// reply subject, and a core publish there is stored too).
func (c *Codec) validReplyTo(s, id string) string {
	if len(s) > maxReplyToLength {
		return fmt.Sprintf("is longer than %d bytes", maxReplyToLength)
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" || tok == "*" || tok == ">" {
			return "is not a literal subject"
		}
		for i := 0; i < len(tok); i++ {
			if b := tok[i]; b <= ' ' || b == 0x7f {
				return "is not a literal subject"
			}
		}
	}
	if strings.HasPrefix(s, "$") {
		return "is a system subject"
	}
	own := c.subjects.Reply(id)
	if strings.HasPrefix(s, c.subjects.Reply("")) && (id == "" || s != own) {
		return fmt.Sprintf("is the reply subject of another request: under %s only the request's own %s may be used (or leave replyto out)", c.subjects.Reply("*"), own)
	}
	if strings.HasPrefix(s, c.subjects.Prefix+".") && !strings.HasPrefix(s, c.subjects.Reply("")) {
		return fmt.Sprintf("is inside %s.> but not the request's own %s", c.subjects.Prefix, own)
	}
	return ""
}

// decode reads the event and, as far as it gets, the partial information
// needed to answer it.
func (c *Codec) decode(h nats.Header, body []byte) (*event.Event, partial, *EventError) {
	if size := messageSize(h, body); size > c.maxPayload {
		return nil, partial{}, eventErrorf(CodePayloadTooLarge,
			"message of %d bytes exceeds the limit of %d bytes (headers and body)", size, c.maxPayload)
	}
	mode, eerr := detectMode(h)
	if eerr != nil {
		return nil, partial{}, eerr
	}
	var a attrs
	if mode == Binary {
		a, eerr = readBinary(h, body)
	} else {
		a, eerr = readStructured(body)
	}
	p := a.partial()
	if eerr != nil {
		return nil, p, eerr
	}
	ev, eerr := a.event()
	return ev, p, eerr
}

// messageSize is the encoded size of the headers and the body.
func messageSize(h nats.Header, body []byte) int {
	n := len(body)
	if len(h) > 0 {
		n += len("NATS/1.0\r\n\r\n")
		for k, vs := range h {
			for _, v := range vs {
				n += len(k) + len(v) + len(": \r\n")
			}
		}
	}
	return n
}

// detectMode applies the receive rule: ce-specversion → binary; else
// Content-Type application/cloudevents*, a JSON type (application/json,
// text/json, +json) or none → structured; else binary.
func detectMode(h nats.Header) (Mode, *EventError) {
	var contentType string
	hasCT := false
	for k, vs := range h {
		if strings.EqualFold(k, AttrHeaderPrefix+"specversion") {
			return Binary, nil
		}
		if strings.EqualFold(k, ContentTypeHeader) && len(vs) > 0 {
			contentType, hasCT = vs[0], true
		}
	}
	if !hasCT {
		return Structured, nil
	}
	ct := mediaType(contentType)
	if strings.HasPrefix(ct, "application/cloudevents-batch") {
		return 0, eventErrorf(CodeMalformedEvent, "batch mode (%s) is not supported on NATS", clip(contentType))
	}
	if strings.HasPrefix(ct, "application/cloudevents") {
		return Structured, nil
	}
	if isJSONContentType(ct) {
		// A JSON body without ce-specversion cannot be a binary event
		// (that needs the header): it is a structured event sent by a
		// JSON client that labels it application/json.
		return Structured, nil
	}
	return Binary, nil
}

// mediaType returns the lower-case media type of a Content-Type value,
// without parameters.
func mediaType(ct string) string {
	ct, _, _ = strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(ct))
}

// isJSONContentType reports whether ct is application/json, text/json or
// a +json type.
func isJSONContentType(ct string) bool {
	mt := mediaType(ct)
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// contextAttrs are the attributes that are not extensions.
var contextAttrs = []string{"specversion", "id", "source", "type", "subject", "time", "datacontenttype", "dataschema"}

// requiredAttrs are the attributes every event needs, in the order they are
// reported when missing.
var requiredAttrs = []string{"id", "source", "specversion", "type"}

// attrs is an event read from the wire but not yet checked.
type attrs struct {
	context    map[string]string // contextAttrs present
	ext        map[string]any    // string, int32 or bool
	data       []byte
	dataBase64 bool
}

func (a attrs) partial() partial {
	str := func(k string) string { s, _ := a.ext[k].(string); return s }
	return partial{
		id:          a.context["id"],
		replyTo:     str(ExtReplyTo),
		branchID:    str(ExtBranchID),
		traceParent: str(ExtTraceParent),
	}
}

// event checks the attributes and builds the event.
func (a attrs) event() (*event.Event, *EventError) {
	var missing []string
	for _, k := range requiredAttrs {
		if a.context[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		word := "attribute"
		if len(missing) > 1 {
			word = "attributes"
		}
		return nil, eventErrorf(CodeMissingAttribute, "missing required %s: %s", word, strings.Join(missing, ", "))
	}
	if sv := a.context["specversion"]; sv != event.CloudEventsVersionV1 {
		return nil, eventErrorf(CodeUnsupportedSpecVersion, "specversion %q is not supported: want %q", clip(sv), event.CloudEventsVersionV1)
	}
	ev := event.New(event.CloudEventsVersionV1)
	ev.SetID(a.context["id"])
	ev.SetSource(a.context["source"])
	ev.SetType(a.context["type"])
	if s, ok := a.context["subject"]; ok {
		ev.SetSubject(s)
	}
	if s, ok := a.context["time"]; ok {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, eventErrorf(CodeMalformedEvent, "time %q is not an RFC 3339 timestamp", clip(s))
		}
		ev.SetTime(t)
	}
	if s, ok := a.context["datacontenttype"]; ok {
		ev.SetDataContentType(s)
	}
	if s, ok := a.context["dataschema"]; ok {
		ev.SetDataSchema(s)
	}
	names := make([]string, 0, len(a.ext))
	for k := range a.ext {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if !validExtName(k) {
			return nil, eventErrorf(CodeMalformedEvent, "extension attribute name %q must be lower-case letters and digits", clip(k))
		}
		ev.SetExtension(k, a.ext[k])
	}
	if len(a.data) > 0 {
		ev.DataEncoded = a.data
		ev.DataBase64 = a.dataBase64
	}
	if err := ev.Validate(); err != nil {
		return nil, eventErrorf(CodeMalformedEvent, "invalid event: %v", err)
	}
	return &ev, nil
}

func validExtName(k string) bool {
	if k == "" || k == "data" || k == "data_base64" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// readStructured reads the JSON event format.
func readStructured(body []byte) (attrs, *EventError) {
	a := attrs{context: map[string]string{}, ext: map[string]any{}}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		if len(body) == 0 {
			return a, eventErrorf(CodeMalformedEvent, "empty body: want a CloudEvent in JSON format")
		}
		return a, eventErrorf(CodeMalformedEvent, "body is not a JSON object (structured CloudEvent): %s", jsonErr(err))
	}
	// Read the attributes used to answer first, so that they are known
	// even when another attribute is bad.
	for _, k := range []string{"id", ExtReplyTo, ExtBranchID, ExtTraceParent} {
		var s string
		if raw, ok := fields[k]; ok && json.Unmarshal(raw, &s) == nil {
			if k == "id" {
				a.context[k] = s
			} else {
				a.ext[k] = s
			}
		}
	}
	for k, raw := range fields {
		if isNull(raw) {
			delete(a.ext, k)
			continue
		}
		switch {
		case k == "data":
			a.data = raw
		case k == "data_base64":
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return a, eventErrorf(CodeMalformedEvent, "data_base64 must be a string")
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return a, eventErrorf(CodeMalformedEvent, "data_base64 is not base64: %v", err)
			}
			a.data, a.dataBase64 = b, true
		case slices.Contains(contextAttrs, k):
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return a, eventErrorf(CodeMalformedEvent, "attribute %s must be a string", k)
			}
			a.context[k] = s
		default:
			v, err := extValue(raw)
			if err != nil {
				return a, eventErrorf(CodeMalformedEvent, "extension attribute %q %v", clip(k), err)
			}
			a.ext[k] = v
		}
	}
	if _, hasData := fields["data"]; hasData && a.dataBase64 {
		return a, eventErrorf(CodeMalformedEvent, "data and data_base64 are both present")
	}
	if a.data != nil && !a.dataBase64 {
		// A JSON string under a non-JSON datacontenttype is the data's text.
		if ct, ok := a.context["datacontenttype"]; ok && !isJSONContentType(ct) && a.data[0] == '"' {
			var s string
			if json.Unmarshal(a.data, &s) == nil {
				a.data = []byte(s)
			}
		}
	}
	return a, nil
}

// extValue converts a JSON extension value to a CloudEvents type.
func extValue(raw json.RawMessage) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case string, bool:
		return x, nil
	case float64:
		if x != float64(int32(x)) {
			return nil, errors.New("must be a 32-bit integer when it is a number")
		}
		return int32(x), nil
	}
	return nil, errors.New("must be a string, an integer or a boolean")
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// readBinary reads the ce- headers and the body.
func readBinary(h nats.Header, body []byte) (attrs, *EventError) {
	a := attrs{context: map[string]string{}, ext: map[string]any{}}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var firstErr *EventError
	var fallbackCT string
	var dups []string
	for _, k := range keys {
		vs := h[k]
		if len(vs) == 0 {
			continue
		}
		if strings.EqualFold(k, ContentTypeHeader) {
			fallbackCT = vs[0]
			continue
		}
		if len(k) <= len(AttrHeaderPrefix) || !strings.EqualFold(k[:len(AttrHeaderPrefix)], AttrHeaderPrefix) {
			continue
		}
		name := strings.ToLower(k[len(AttrHeaderPrefix):])
		v, err := decodeHeaderValue(vs[0])
		if err != nil {
			if firstErr == nil {
				firstErr = eventErrorf(CodeMalformedEvent, "header %s: %v", clip(k), err)
			}
			continue
		}
		_, dupCtx := a.context[name]
		_, dupExt := a.ext[name]
		if dupCtx || dupExt {
			if firstErr == nil {
				firstErr = eventErrorf(CodeMalformedEvent, "attribute %s is given by two headers", clip(name))
			}
			dups = append(dups, name)
		}
		if slices.Contains(contextAttrs, name) {
			a.context[name] = v
		} else {
			a.ext[name] = v
		}
	}
	// An ambiguous attribute is not used, not even to answer.
	for _, name := range dups {
		delete(a.context, name)
		delete(a.ext, name)
	}
	// sdk-go senders may put the data content type in Content-Type only.
	if _, ok := a.context["datacontenttype"]; !ok && fallbackCT != "" {
		a.context["datacontenttype"] = fallbackCT
	}
	if len(body) > 0 {
		a.data = body
	}
	if firstErr != nil {
		return a, firstErr
	}
	return a, nil
}

// EncodeHeaderValue percent-encodes an attribute value for a ce- header:
// space, '"', '%' and every byte outside U+0021..U+007E of its UTF-8 form
// become %XY with upper-case hex. Values that need no encoding are returned
// unchanged.
func EncodeHeaderValue(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if needsEscape(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hexDigits = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&0xf])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

func needsEscape(c byte) bool { return c <= 0x20 || c >= 0x7f || c == '"' || c == '%' }

// DecodeHeaderValue reverses EncodeHeaderValue: a value in double quotes is
// first unquoted (backslash escapes removed), then %XY sequences (either
// case) are decoded once. A '%' not followed by two hex digits is kept as
// is, for senders that do not encode. The result must be valid UTF-8.
func DecodeHeaderValue(s string) (string, error) { return decodeHeaderValue(s) }

func decodeHeaderValue(s string) (string, error) {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		inner := s[1 : len(s)-1]
		var b strings.Builder
		for i := 0; i < len(inner); i++ {
			if inner[i] == '\\' && i+1 < len(inner) {
				i++
			}
			b.WriteByte(inner[i])
		}
		s = b.String()
	}
	if strings.IndexByte(s, '%') >= 0 {
		b := make([]byte, 0, len(s))
		for i := 0; i < len(s); i++ {
			if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
				i += 2
				continue
			}
			b = append(b, s[i])
		}
		s = string(b)
	}
	if !utf8.ValidString(s) {
		return "", errors.New("value is not valid UTF-8 after percent-decoding")
	}
	return s, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// Encode returns a message carrying e on subject, in the given mode. It
// sets the Nats-Msg-Id header to the event id, so that JetStream drops a
// duplicate publish within the stream's duplicate window. In binary mode
// every attribute is a lower-case ce- header, ce-specversion always
// present, values percent-encoded only where needed. It returns ErrEncode
// (wrapped) when e is not a valid event.
func Encode(subject string, e *event.Event, mode Mode) (*nats.Msg, error) {
	msg, err := EncodeCore(subject, e, mode)
	if err != nil {
		return nil, err
	}
	msg.Header.Set(jetstream.MsgIDHeader, e.ID())
	return msg, nil
}

// EncodeCore is Encode without the Nats-Msg-Id header: for core NATS
// request/reply (tool invocations and their results), where JetStream's
// de-duplication plays no part.
func EncodeCore(subject string, e *event.Event, mode Mode) (*nats.Msg, error) {
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	msg := nats.NewMsg(subject)
	switch mode {
	case Structured:
		body, err := marshalStructured(e)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrEncode, err)
		}
		msg.Header.Set(ContentTypeHeader, ContentTypeCloudEventsJSON)
		msg.Data = body
	case Binary:
		set := func(name, value string) {
			msg.Header[AttrHeaderPrefix+name] = []string{EncodeHeaderValue(value)}
		}
		set("specversion", e.SpecVersion())
		set("id", e.ID())
		set("source", e.Source())
		set("type", e.Type())
		if !e.Time().IsZero() {
			set("time", e.Time().UTC().Format(time.RFC3339Nano))
		}
		if v := e.DataContentType(); v != "" {
			set("datacontenttype", v)
		}
		if v := e.DataSchema(); v != "" {
			set("dataschema", v)
		}
		if v := e.Subject(); v != "" {
			set("subject", v)
		}
		for name, v := range e.Extensions() {
			s, err := formatExt(v)
			if err != nil {
				return nil, fmt.Errorf("%w: extension %s: %w", ErrEncode, name, err)
			}
			set(name, s)
		}
		msg.Data = e.Data()
	default:
		return nil, fmt.Errorf("%w: unknown mode %v", ErrEncode, mode)
	}
	return msg, nil
}

// formatExt returns the canonical string form of an extension value.
func formatExt(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case int32:
		return fmt.Sprint(x), nil
	case []byte:
		return base64.StdEncoding.EncodeToString(x), nil
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	case fmt.Stringer:
		return x.String(), nil
	}
	return "", fmt.Errorf("unsupported value type %T", v)
}

// clip shortens s for an error message.
func clip(s string) string { return wire.Truncate(s, 80) }

// jsonErr describes a JSON decoding error briefly.
func jsonErr(err error) string {
	if err == nil {
		return "null"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "a JSON " + te.Value + ", not an object"
	}
	return err.Error()
}

// deadlineOf reads a deadline attribute: an RFC 3339 string (a time, as the
// CloudEvents SDK may give for a timestamp, is taken as it is).
func deadlineOf(v any) (time.Time, error) {
	switch d := v.(type) {
	case time.Time:
		return d.UTC(), nil
	case string:
		t, err := time.Parse(time.RFC3339Nano, d)
		if err != nil {
			return time.Time{}, err
		}
		return t.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("deadline of type %T", v)
}
