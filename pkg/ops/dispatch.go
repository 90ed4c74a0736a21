package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/rs/zerolog"
)

// Config configures an [Engine].
type Config struct {
	// Authorizer gates act's tool calls once the branch's own list of
	// tools allowed them (see Actions in the package doc); nil means no
	// gate beyond that list.
	Authorizer Authorizer
	// Clock returns the current time; nil means time.Now. Tests set it to
	// get stable timestamps.
	Clock func() time.Time
	// Logger receives operational logs; nil means no logging.
	Logger *zerolog.Logger
	// MaxPromptBytes bounds the text of the messages of one model call
	// (the branch's history as a prompt, plus the instruction): a request
	// whose prompt is larger is refused before the call. 0 means
	// DefaultMaxPromptBytes.
	MaxPromptBytes int
	// MaxConcurrentTools bounds how many tool calls one act request runs
	// at once with the concurrent strategy; 0 means
	// DefaultMaxConcurrentTools.
	MaxConcurrentTools int
	// Middles holds the custom middles requests may select by name besides
	// the built-in ones; nil means an empty registry, reachable through
	// [Engine.Middles].
	Middles *Middles
	// Observer is told about every model and tool call (metrics, traces);
	// nil means none. Join several with [Observers].
	Observer Observer
	// Operations holds the named operations served as "op.NAME"; nil means
	// an empty registry, reachable through [Engine.Operations].
	Operations *Operations
	// Providers resolves model references to providers. Required for the
	// verbs that call a model.
	Providers *Providers
	// Signals receives lifecycle and message-added signals; nil means none.
	Signals Signals
	// Sleep waits d, or until ctx is done (then it returns ctx.Err()); nil
	// means a timer. The parse stage waits through it before its reformat
	// rounds; tests set it to run that schedule without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
	// Store holds branches. Required.
	Store history.Store
	// ContextProviders are offered the action responses of every operate
	// (see [ContextProvider]).
	ContextProviders []ContextProvider
	// Tools runs act's tool calls; nil means no tools (every call is
	// answered as an unknown tool).
	Tools Invoker
	// Chunks opens the chunk stream of each streaming request (run, and
	// communicate or operate with "stream": true); nil means the chunks go
	// nowhere (the answer is the same).
	Chunks ChunkOutlet
	// RunLog keeps the chunk logs and snapshots of runs with
	// stream_persist; nil means stream_persist keeps nothing.
	RunLog RunLog
	// RunLogDir is the run log directory of a run with stream_persist that
	// names none (stream_persist_dir, 0021-D5-06); "" means
	// DefaultRunLogDir. It must be a valid directory ([ValidRunLogDir]).
	RunLogDir string
}

// Engine runs operation requests against a [history.Store] and model [Provider]s.
// It holds no per-request state and is safe for concurrent use; several
// engines (in several processes) may share one store.
type Engine struct {
	store      history.Store
	providers  *Providers
	log        zerolog.Logger
	clock      func() time.Time
	observer   Observer
	maxPrompt  int
	signals    Signals
	sleep      func(context.Context, time.Duration) error
	verbs      map[string]verbFunc
	operations *Operations
	middles    *Middles
	prompts    *promptMemo
	tools      toolConfig
	chunks     ChunkOutlet
	runLog     RunLog
	// runLogDefault is the run log directory of a request naming none.
	runLogDefault string

	contextProviders []ContextProvider
}

type verbFunc func(e *Engine, ctx context.Context, req Request) (*Result, error)

// NewEngine validates cfg and returns an engine.
func NewEngine(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("ops: Config.Store is required")
	}
	tools, err := newToolConfig(cfg)
	if err != nil {
		return nil, err
	}
	runLogDir := cfg.RunLogDir
	if runLogDir == "" {
		runLogDir = DefaultRunLogDir
	}
	if !ValidRunLogDir(runLogDir) {
		return nil, fmt.Errorf("%w: Config.RunLogDir %q: want %s", ErrInvalidRunLogDir, Truncate(runLogDir, MaxRunLogDirLength+8), RunLogDirRule)
	}
	e := &Engine{
		store:      cfg.Store,
		providers:  cfg.Providers,
		log:        zerolog.Nop(),
		clock:      cfg.Clock,
		observer:   cfg.Observer,
		maxPrompt:  cfg.MaxPromptBytes,
		signals:    cfg.Signals,
		sleep:      cfg.Sleep,
		operations: cfg.Operations,
		middles:    cfg.Middles,
		prompts:    newPromptMemo(0),
		chunks:     cfg.Chunks,
		runLog:     cfg.RunLog,

		runLogDefault: runLogDir,

		contextProviders: cfg.ContextProviders,
		tools:            tools,
	}
	if e.operations == nil {
		e.operations = NewOperations()
	}
	if e.middles == nil {
		e.middles = NewMiddles()
	}
	if e.providers == nil {
		e.providers = NewProviders(nil)
	}
	if cfg.Logger != nil {
		e.log = *cfg.Logger
	}
	if e.maxPrompt <= 0 {
		e.maxPrompt = DefaultMaxPromptBytes
	}
	if e.clock == nil {
		e.clock = time.Now
	}
	e.verbs = map[string]verbFunc{
		"branch.create":   (*Engine).branchCreate,
		"branch.get":      (*Engine).branchGet,
		"branch.clone":    (*Engine).branchClone,
		"branch.clear":    (*Engine).branchClear,
		"branch.delete":   (*Engine).branchDelete,
		"branch.history":  (*Engine).branchHistory,
		"chat":            (*Engine).chatVerb,
		"chat_and_record": (*Engine).chatAndRecord,
		"communicate":     (*Engine).communicate,
		"parse":           (*Engine).parseVerb,
		"act":             (*Engine).actVerb,
		"operate":         (*Engine).operate,
		"interpret":       (*Engine).interpretVerb,
		"react":           (*Engine).react,
		"run":             (*Engine).runVerb,
	}
	return e, nil
}

// Verbs returns the built-in verbs the engine serves, sorted. Named
// operations ("op.NAME") are listed by Operations().Names().
func (e *Engine) Verbs() []string {
	return slices.Sorted(maps.Keys(e.verbs))
}

// Do runs req and returns its result. The verb "op.NAME" runs the operation
// registered as NAME (see [Operations]). Every failure is an *Error with a
// stable Code: CodeUnknownVerb for an unserved verb or an unregistered
// operation name, CodeInvalidRequest for unusable data, CodeBranchNotFound,
// CodeBranchExists, CodeProvider, CodeParse, CodeExtraction and
// CodeSchemaRejected (parse), CodeAction (act), CodeTimeout, CodeCanceled,
// CodeUnavailable (store failures, temporary) or CodeInternal. Temporary
// errors are worth retrying.
//
// Do is idempotent per request id: a request whose id is already committed on
// its branch is answered from history (Result.Replayed) without calling a
// model or a tool again.
func (e *Engine) Do(ctx context.Context, req Request) (*Result, error) {
	start := e.clock()
	fn, err := e.verbFor(req.Verb)
	if err != nil {
		return nil, err
	}
	if req.ID == "" {
		return nil, Errorf(CodeInvalidRequest, "request id is required")
	}
	res, err := fn(e, ctx, req)
	if err != nil {
		oe := asError(ctx, err)
		e.log.Debug().Str("verb", req.Verb).Str("request_id", req.ID).Str("code", string(oe.Code)).
			Bool("temporary", oe.Temporary).Msg(oe.Error())
		return nil, oe
	}
	if !res.Replayed && res.DurationMS == 0 {
		res.DurationMS = e.clock().Sub(start).Milliseconds()
	}
	if res.Value == nil {
		res.Value = json.RawMessage("null")
	}
	return res, nil
}

// asError turns any failure into an *Error with a stable code.
func asError(ctx context.Context, err error) *Error {
	var oe *Error
	if errors.As(err, &oe) {
		return oe
	}
	var pe *ProviderError
	switch {
	case errors.As(err, &pe):
		return &Error{Code: CodeProvider, Message: pe.Error(), Temporary: pe.Temporary, Err: err}
	case errors.Is(err, history.ErrBranchNotFound):
		return &Error{Code: CodeBranchNotFound, Message: err.Error(), Err: err}
	case errors.Is(err, history.ErrBranchExists):
		return &Error{Code: CodeBranchExists, Message: err.Error(), Err: err}
	case errors.Is(err, ErrUnknownProvider):
		return &Error{Code: CodeInvalidRequest, Message: err.Error(), Err: err}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &Error{Code: CodeTimeout, Message: err.Error(), Temporary: true, Err: err}
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		// Cancelled by its client, the request is over; cancelled by
		// anything else (its worker stopping), it runs again elsewhere:
		// temporary, so that this attempt emits no terminal signal.
		byClient := errors.Is(err, ErrCanceledByClient) || errors.Is(context.Cause(ctx), ErrCanceledByClient)
		return &Error{Code: CodeCanceled, Message: err.Error(), Temporary: !byClient, Err: err}
	}
	return &Error{Code: CodeInternal, Message: err.Error(), Err: err}
}

// storeErr classifies a Store failure: sentinels keep their meaning, context
// errors stay context errors, an *Error from the store keeps its own code
// and Temporary flag (a store reports lasting damage, such as undecodable
// history, as a final error), anything else is a temporary CodeUnavailable.
func storeErr(op string, err error) error {
	var oe *Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, history.ErrBranchNotFound), errors.Is(err, history.ErrBranchExists),
		errors.Is(err, history.ErrAlreadyCommitted), errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded), errors.As(err, &oe):
		return err
	}
	return &Error{Code: CodeUnavailable, Message: fmt.Sprintf("store %s: %v", op, err), Temporary: true, Err: err}
}

// decodeData decodes req.Data into v with specific messages for bad input.
// Empty data decodes as {}.
func decodeData(data json.RawMessage, v any) error {
	if len(data) == 0 || string(data) == "null" {
		data = json.RawMessage("{}")
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case isOutOfRange(err):
			return Errorf(CodeInvalidRequest, "data %s", outOfRangeMessage(err))
		case errors.As(err, &te) && te.Field != "":
			return Errorf(CodeInvalidRequest, "data field %q must be %s, not a JSON %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		case errors.As(err, &te):
			return Errorf(CodeInvalidRequest, "data must be a JSON object, not a JSON %s", te.Value)
		case errors.As(err, &se):
			return Errorf(CodeInvalidRequest, "data is not valid JSON: %v", err)
		}
		return Errorf(CodeInvalidRequest, "bad data: %v", err)
	}
	return nil
}

// isOutOfRange reports whether err is encoding/json refusing a number that
// no float64 holds (1e400): valid JSON, but outside what lionbus computes
// with.
func isOutOfRange(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te) && strings.HasPrefix(te.Value, "number ") &&
		te.Type != nil && te.Type.Kind() == reflect.Float64
}

// outOfRangeMessage says which number of an isOutOfRange error is refused
// and why, naming its field when known.
func outOfRangeMessage(err error) string {
	var te *json.UnmarshalTypeError
	errors.As(err, &te)
	where := ""
	if te.Field != "" {
		where = fmt.Sprintf(" (field %q)", te.Field)
	}
	return fmt.Sprintf("holds the number %s%s, which is out of range: numbers must be finite and at most about 1.8e308 in magnitude (64-bit floating point)",
		Truncate(strings.TrimPrefix(te.Value, "number "), 64), where)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "uint64", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "of another type"
}

// marshalValue encodes a result value.
func marshalValue(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &Error{Code: CodeInternal, Message: fmt.Sprintf("encode result: %v", err), Err: err}
	}
	return b, nil
}
