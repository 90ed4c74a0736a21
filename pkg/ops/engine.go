package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/lionbus/lionbus/pkg/ops/forks"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/prompt"
	"github.com/lionbus/lionbus/pkg/wire"
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
	// Logger receives operational logs. The zero value discards them.
	Logger zerolog.Logger
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
	// names none (stream_persist_dir); "" means
	// DefaultRunLogDir. It must be a valid directory ([ValidRunLogDir]).
	RunLogDir string
}

// Engine runs operation requests against a [history.Store] and model
// [Provider]s.
// It holds no per-request state and is safe for concurrent use; several
// engines (in several processes) may share one store.
type Engine struct {
	store      history.Store
	forks      *forks.Store // store, folding forks with their parents' prefixes
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
	prompts    *prompt.Memo
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
	fs := forks.New(cfg.Store)
	e := &Engine{
		store:      fs,
		forks:      fs,
		providers:  cfg.Providers,
		log:        cfg.Logger,
		clock:      cfg.Clock,
		observer:   cfg.Observer,
		maxPrompt:  cfg.MaxPromptBytes,
		signals:    cfg.Signals,
		sleep:      cfg.Sleep,
		operations: cfg.Operations,
		middles:    cfg.Middles,
		prompts:    prompt.NewMemo(0),
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
		"branch.import":   (*Engine).branchImport,
		"branch.fork":     (*Engine).branchFork,
		"branch.forks":    (*Engine).branchForks,
		"branch.list":     (*Engine).branchList,
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
// A request whose tool call waits for an approver is parked: Do records
// the call on the branch (a branch.approval_requested event, once per
// approval), commits nothing of the operation and returns a
// *[ParkedError] (errors.Is ErrParked); its transport runs it again with
// Request.Resume set once the approval was decided.
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
	if req.Resume != "" && req.Attempt < 2 {
		// A resumed request replays what it did before it was parked, as
		// a redelivery does: from the journal, without paying again.
		req.Attempt = 2
	}
	opCtx, parked := wire.WithParker(WithAttempt(ctx, req.Attempt))
	res, err := fn(e, opCtx, req)
	p := parked()
	if p == nil {
		_ = errors.As(err, &p)
	}
	if p != nil {
		if err := e.recordParked(ctx, req, p); err != nil {
			return nil, err
		}
		e.log.Debug().Str("verb", req.Verb).Str("request_id", req.ID).Str("approval", p.ApprovalID).Msg("request parked")
		return nil, p
	}
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
