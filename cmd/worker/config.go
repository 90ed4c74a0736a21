package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/lionbus/lionbus/cmd/internal/natsflags"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/anthropic"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai"
	"github.com/lionbus/lionbus/pkg/tools"
)

// Defaults of the worker's flags.
const (
	defaultConcurrency  = worker.DefaultMaxInFlight
	defaultDrainTimeout = 30 * time.Second
	defaultPort         = 4222
	// maxConcurrency bounds --concurrency: each slot is one request in
	// flight, holding a model call and a branch in memory.
	maxConcurrency = 1024
	// maxMaxAckPending bounds --max-ack-pending: the queue of requests
	// (OpsMaxMsgs) holds no more.
	maxMaxAckPending = provision.DefaultOpsMaxMsgs
)

// errHelp is returned by parseConfig when -h/--help was asked for.
var errHelp = flag.ErrHelp

// config is everything the worker's flags say.
type config struct {
	// Embedded server (used when NATSURL is empty).
	Host       string
	Port       int
	StoreDir   string
	MaxPayload int

	// Connection to a real deployment.
	NATSURL string
	// NATSContext names saved connection settings (publisher context save)
	// supplying the connection flags not given otherwise.
	NATSContext string
	natsflags.Credentials
	ConnTimeout time.Duration
	// StartupTimeout bounds waiting for JetStream to be ready.
	StartupTimeout time.Duration

	// Worker.
	Prefix       string
	Name         string
	Concurrency  int
	DrainTimeout time.Duration
	Replicas     int
	// AckWait and LeaseTTL bound how long a dead worker's requests and
	// branches wait before another worker takes them over.
	AckWait  time.Duration
	LeaseTTL time.Duration
	// MaxAckPending bounds the requests delivered to all workers together
	// and not acknowledged (the workers consumer's max ack pending).
	MaxAckPending int
	// LeaseStorage is the storage of the leases stream when it is created
	// ("file" or "memory").
	LeaseStorage string
	// CacheBranches and CacheBytes bound the branches the worker keeps in
	// memory (store.Config.CacheBranches and CacheBytes).
	CacheBranches int
	CacheBytes    int
	// DeletedHistoryRetention is how long a deleted branch's events are
	// kept after its tombstone; 0 keeps them until a purge.
	DeletedHistoryRetention time.Duration
	// HistoryKeepEvents and HistoryMaxAge are the retention of live
	// branches' history: keep at least the last N events of each, at
	// least the events younger than the age (0: no limit).
	HistoryKeepEvents int
	HistoryMaxAge     time.Duration
	// HealthInterval is how often the worker checks its streams,
	// consumer and buckets when nothing else made it.
	HealthInterval time.Duration
	// RunLogDir is the run log directory of runs with stream_persist that
	// name none.
	RunLogDir string

	// MetricsAddr is where /metrics, /healthz and /readyz are served; ""
	// for nowhere.
	MetricsAddr string

	// Logs.
	LogLevel  string
	LogFormat string
	// RequestLogLevel is the level of the line logged per answered
	// request.
	RequestLogLevel string

	// Demo runs the scripted demo conversation after start-up, and serves
	// the example tool services (examples/tools) beside the worker.
	Demo bool

	// Tools: the default bound of a tool call, the tools no branch may
	// call, and the remote approver (<prefix>.approve.<tool>).
	ToolTimeout     time.Duration
	ToolTimeouts    string // name=duration,...
	ToolsDeny       string
	ToolsApprove    bool
	ApprovalTimeout time.Duration
	// Approvals (--tools-approve): parked (the default) or waited for;
	// a parked approval's deadline, what it decides, and the sweep.
	ApprovalMode       string
	ApprovalDeadline   time.Duration
	ApprovalOnDeadline string
	ApprovalSweep      time.Duration

	// OpenAI-compatible model provider, registered as "openai" when either
	// is set (falling back to OPENAI_BASE_URL and OPENAI_API_KEY).
	OpenAIBaseURL string
	OpenAIAPIKey  string

	// CLIs are the coding-agent CLIs served as "cli:NAME" (--cli
	// NAME=COMMAND, repeatable, and --cli-config FILE).
	CLIs      cliList
	CLIConfig string

	// Anthropic Messages provider, registered as "anthropic" when either
	// is set (falling back to ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY).
	AnthropicBaseURL string
	AnthropicAPIKey  string

	// Budgets is a JSON file of model budgets (the fleet's starting value)
	// and prices; see docs/budgets.md.
	Budgets string
}

// workerLong is the description of the worker in its help.
const workerLong = `Runs a lionbus worker: it consumes operation requests (CloudEvents on
<prefix>.ops.<verb>) from JetStream, runs them and publishes each result or
error on the request's reply subject.

Without --nats it starts an embedded NATS server with JetStream (loopback,
--port, --store-dir) and serves it; with --nats it joins an existing
deployment. SIGINT/SIGTERM stop fetching new requests, let in-flight ones
finish (at most --drain-timeout) and exit.

Every flag can also be set in the environment as LIONBUS_<FLAG>, upper case
with dashes as underscores (LIONBUS_NATS, LIONBUS_PASSWORD, LIONBUS_CONCURRENCY,
...); a flag on the command line wins. --openai-base-url and --openai-api-key
fall back to OPENAI_BASE_URL and OPENAI_API_KEY, as the OpenAI SDKs do; when
either is set, model references "openai:MODEL" are served by that
OpenAI-compatible Chat Completions API (next to the "scripted" provider).

Exit status: 0 after a clean shutdown, 1 when the worker cannot start,
connect or provision (or stops unexpectedly), 2 on a usage error. A drain
that had to abandon in-flight requests (left for redelivery) still exits 0,
and logs that it did.`

// workerExamples are the examples of the worker's help.
const workerExamples = `  worker --demo                       embedded NATS + a scripted demo conversation
  worker --store-dir ./data/nats      embedded NATS, state kept across restarts
  worker --nats nats://nats:4222 --creds worker.creds --concurrency 32
  worker --nats nats://nats:4222 --connect-timeout 2m   # waits for a server that is not up yet
  source <(worker completion bash)`

// parseConfig parses the worker's command line. It returns errHelp when
// help, the version or a completion script was printed on stdout instead,
// and a usage error for bad flags or values.
func parseConfig(args []string, stdout, stderr io.Writer) (config, error) {
	var c config
	fs := newFlagSet(&c, stderr)
	parsed := false
	root := newCommand(fs, stdout, stderr, func(args []string) error {
		parsed = true
		if len(args) > 0 {
			return fmt.Errorf("unexpected argument %q", args[0])
		}
		return nil
	})
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		return c, err
	}
	if !parsed {
		return c, errHelp
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := flagsFromEnv(fs, os.LookupEnv); err != nil {
		return c, err
	}
	if c.NATSContext != "" {
		if err := flagsFromContext(fs, c.NATSContext, given, os.LookupEnv); err != nil {
			return c, err
		}
	}
	openAIFromEnv(&c, os.LookupEnv)
	{
		env := anthropic.ConfigFromEnv(os.LookupEnv)
		if c.AnthropicBaseURL == "" {
			c.AnthropicBaseURL = env.BaseURL
		}
		if c.AnthropicAPIKey == "" {
			c.AnthropicAPIKey = env.APIKey
		}
	}
	if c.Name == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "worker"
		}
		c.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return c, c.validate()
}

// newFlagSet declares the worker's flags, bound to the fields of c.
func newFlagSet(c *config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)

	fs.StringVar(&c.Host, "host", "127.0.0.1", "embedded server: interface to listen on (beyond localhost, --user/--password or --token must be set)")
	fs.IntVar(&c.Port, "port", defaultPort, "embedded server: client port (-1 picks a free port)")
	fs.StringVar(&c.StoreDir, "store-dir", "", "embedded server: JetStream store directory (default: a temporary directory removed on exit)")
	fs.IntVar(&c.MaxPayload, "max-payload", 0, fmt.Sprintf("largest request accepted, in bytes; larger ones get a payload_too_large error (default %d, at most %d)", protocol.DefaultMaxPayload, maxRequestPayload))

	fs.StringVar(&c.NATSContext, "nats-context", "", "saved connection settings (publisher context save NAME) for the connection flags not given here or in the environment")
	fs.StringVar(&c.NATSURL, "nats", "", "join the NATS deployment at this URL (comma-separated list allowed) instead of starting an embedded server")
	c.Credentials.Register(fs)
	fs.DurationVar(&c.ConnTimeout, "connect-timeout", 10*time.Second, "how long to wait for the NATS connection; a server that is not up yet is tried again until then")
	fs.DurationVar(&c.StartupTimeout, "startup-timeout", 2*time.Minute, "how long to wait for JetStream to be ready (a new cluster electing its leader) before giving up")

	fs.StringVar(&c.Prefix, "prefix", "lion", "subject prefix of every subject, stream and bucket")
	fs.StringVar(&c.Name, "name", "", "worker name, shown in logs and NATS connection names (default: host name and pid)")
	fs.IntVar(&c.Concurrency, "concurrency", defaultConcurrency, fmt.Sprintf("requests run at the same time (1..%d)", maxConcurrency))
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", defaultDrainTimeout, "on shutdown, how long in-flight requests may take to finish")
	fs.IntVar(&c.Replicas, "replicas", 1, "replicas of every stream and bucket when they are created (3 in a 3-node cluster; 1..5)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on /metrics and health on /healthz and /readyz at this address (e.g. :9464; default off)")
	fs.DurationVar(&c.AckWait, "ack-wait", provision.DefaultAckWait, "how long a request delivered to a worker that stopped reporting progress (it died) waits before it is delivered again; set when the consumer is created")
	fs.IntVar(&c.MaxAckPending, "max-ack-pending", provision.DefaultMaxAckPending, fmt.Sprintf("requests delivered to all workers together and not yet answered (1..%d): with models that answer in seconds, the fleet's requests in flight; set on the workers consumer when it is created or provisioned", maxMaxAckPending))
	fs.DurationVar(&c.LeaseTTL, "lease-ttl", provision.DefaultLeaseTTL, "how long a branch stays pinned to a worker that stopped renewing its lease (it died); set when the leases stream is created")
	fs.DurationVar(&c.DeletedHistoryRetention, "deleted-history-retention", 0, "purge the events of a branch deleted this long ago, keeping its tombstone (0: keep them until a branch.delete with purge)")
	fs.IntVar(&c.HistoryKeepEvents, "history-keep-events", 0, "retention of live branches: keep at least the last N events of each branch's history, dropping older ones before a compaction point that holds the branch's state, never a live fork's prefix (0: no limit by count)")
	fs.DurationVar(&c.HistoryMaxAge, "history-max-age", 0, "retention of live branches: keep at least the events of each branch younger than this, dropping older ones before a compaction point, never a live fork's prefix; with --history-keep-events an event is dropped only when both let it go (0: no limit by age)")
	fs.StringVar(&c.LeaseStorage, "lease-storage", provision.LeasesOnFile, "storage of the leases stream when it is created: file (leases outlive a restart of the servers) or memory (cheaper to take and let go; after a restart, no new lease is used for 4/5 of --lease-ttl)")
	fs.IntVar(&c.CacheBranches, "cache-branches", store.DefaultCacheBranches, "branches kept in memory between their requests, least recently used out")
	fs.IntVar(&c.CacheBytes, "cache-bytes", store.DefaultCacheBytes, "bound of the branches kept in memory, in bytes of the encoded history they were folded from (in memory they take about 3.5 times that); when the branches in use at once exceed it, every request reads its branch's snapshot again")
	fs.DurationVar(&c.HealthInterval, "health-interval", worker.DefaultHealthInterval, "how often the worker checks, when no failure or probe made it check sooner, that JetStream answers and every stream, consumer and bucket exists, creating again what is missing")
	fs.StringVar(&c.RunLogDir, "runlog-dir", ops.DefaultRunLogDir, fmt.Sprintf("run log directory of runs with stream_persist that name none (stream_persist_dir): their logs go to <prefix>.runlog.<dir>.<id>.chunks and .snapshot (%s)", ops.RunLogDirRule))

	fs.StringVar(&c.LogLevel, "log-level", "info", "trace, debug, info, warn, error or disabled")
	fs.StringVar(&c.RequestLogLevel, "request-log-level", "info", "level of the one line logged per answered request (id, verb, branch, code, duration): trace, debug, info, warn or disabled")
	fs.StringVar(&c.LogFormat, "log-format", logFormatAuto, "auto (console on a terminal, else JSON), json or console")

	fs.BoolVar(&c.Demo, "demo", false, "run a short scripted demo conversation, then keep serving (and serve the example tool services, calculator and notes)")

	fs.DurationVar(&c.ToolTimeout, "tool-timeout", tools.DefaultInvokeTimeout, "default bound of a tool call (never past the request's own deadline)")
	fs.StringVar(&c.ToolTimeouts, "tool-timeouts", "", "per-tool bounds replacing --tool-timeout, e.g. refund=1m,calculate=2s")
	fs.StringVar(&c.ToolsDeny, "tools-deny", "", "comma-separated tools no branch may call (denied calls are recorded as error values)")
	fs.BoolVar(&c.ToolsApprove, "tools-approve", false, "have an approver decide every tool call (see --approval-mode; docs/approvals.md)")
	fs.StringVar(&c.ApprovalMode, "approval-mode", approvalPark, "with --tools-approve: park (record a pending approval in the approvals bucket, free the worker, resume on the answer) or wait (ask by request/reply on <prefix>.approve.<tool>, no answer within --approval-timeout denies)")
	fs.DurationVar(&c.ApprovalTimeout, "approval-timeout", tools.DefaultApprovalTimeout, "how long to wait for the approver (--approval-mode wait)")
	fs.DurationVar(&c.ApprovalDeadline, "approval-deadline", tools.DefaultApprovalDeadline, "how long a parked approval waits for an answer (--approval-mode park)")
	fs.StringVar(&c.ApprovalOnDeadline, "approval-on-deadline", tools.DeadlineDeny, "what a parked approval's passed deadline decides: deny or approve")
	fs.DurationVar(&c.ApprovalSweep, "approval-sweep", tools.DefaultApprovalSweep, "how often the worker looks for parked approvals whose deadline passed")

	fs.StringVar(&c.OpenAIBaseURL, "openai-base-url", "", fmt.Sprintf("root of an OpenAI-compatible Chat Completions API (vLLM, Ollama, a gateway) for the \"openai\" provider (else $%s; %s when only a key is set)", openai.EnvBaseURL, openai.DefaultBaseURL))
	fs.Var(&c.CLIs, "cli", "define a coding-agent CLI model \"cli:NAME\" as NAME=COMMAND (repeatable; in $LIONBUS_CLI one per line); its output format (Claude Code, Codex CLI or Gemini CLI, see docs/agent-clis.md) is detected from the program's name")
	fs.StringVar(&c.CLIConfig, "cli-config", "", `JSON file of CLI models: [{"name": "claude", "command": ["claude", "--model", "sonnet"], "dir": "/work", "env": ["KEY=VALUE"], "format": "claude"}] (format: claude, codex or gemini; detected when left out)`)
	fs.StringVar(&c.AnthropicBaseURL, "anthropic-base-url", "", fmt.Sprintf("root of the Anthropic Messages API for the \"anthropic\" provider (else $%s; %s when only a key is set)", anthropic.EnvBaseURL, anthropic.DefaultBaseURL))
	fs.StringVar(&c.AnthropicAPIKey, "anthropic-api-key", "", fmt.Sprintf("API key of the \"anthropic\" provider, never printed (else $%s)", anthropic.EnvAPIKey))
	fs.StringVar(&c.Budgets, "budgets", "", `JSON file of model budgets and prices, {"limits": {"openai:gpt-4.1-mini": {"requests": 500, "tokens": 200000, "in_flight": 20}}, "prices": {...}}; the limits seed the fleet's budgets bucket (docs/budgets.md)`)
	fs.StringVar(&c.OpenAIAPIKey, "openai-api-key", "", fmt.Sprintf("API key of the \"openai\" provider, sent as a bearer token and never printed (else $%s; better set in the environment than on the command line)", openai.EnvAPIKey))
	return fs
}

// validate checks values that flag parsing alone cannot.
func (c config) validate() error {
	var errs []error
	if c.Concurrency < 1 || c.Concurrency > maxConcurrency {
		errs = append(errs, fmt.Errorf("--concurrency must be between 1 and %d, got %d", maxConcurrency, c.Concurrency))
	}
	if c.DrainTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--drain-timeout must be positive, got %s", c.DrainTimeout))
	}
	if c.ConnTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--connect-timeout must be positive, got %s", c.ConnTimeout))
	}
	if c.StartupTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--startup-timeout must be positive, got %s", c.StartupTimeout))
	}
	if c.MaxPayload < 0 || c.MaxPayload > maxRequestPayload {
		errs = append(errs, fmt.Errorf("--max-payload must be between 0 (default) and %d, got %d", maxRequestPayload, c.MaxPayload))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("--replicas must be between 1 and 5, got %d", c.Replicas))
	}
	if c.MaxAckPending < 1 || c.MaxAckPending > maxMaxAckPending {
		errs = append(errs, fmt.Errorf("--max-ack-pending %d: want 1..%d", c.MaxAckPending, maxMaxAckPending))
	}
	if c.AckWait < time.Second || c.LeaseTTL < time.Second {
		errs = append(errs, fmt.Errorf("--ack-wait and --lease-ttl must be at least 1s, got %s and %s", c.AckWait, c.LeaseTTL))
	}
	if c.CacheBranches < 1 {
		errs = append(errs, fmt.Errorf("--cache-branches %d: want at least 1", c.CacheBranches))
	}
	if c.CacheBytes < 1 {
		errs = append(errs, fmt.Errorf("--cache-bytes %d: want at least 1", c.CacheBytes))
	}
	if c.LeaseStorage != provision.LeasesOnFile && c.LeaseStorage != provision.LeasesInMemory {
		errs = append(errs, fmt.Errorf("--lease-storage %q: want %s or %s", c.LeaseStorage, provision.LeasesOnFile, provision.LeasesInMemory))
	}
	if c.HistoryKeepEvents < 0 {
		errs = append(errs, fmt.Errorf("--history-keep-events must not be negative, got %d", c.HistoryKeepEvents))
	}
	if c.HistoryMaxAge < 0 {
		errs = append(errs, fmt.Errorf("--history-max-age must not be negative, got %s", c.HistoryMaxAge))
	}
	if c.DeletedHistoryRetention < 0 {
		errs = append(errs, fmt.Errorf("--deleted-history-retention must not be negative, got %s", c.DeletedHistoryRetention))
	}
	if c.HealthInterval <= 0 {
		errs = append(errs, fmt.Errorf("--health-interval must be positive, got %s", c.HealthInterval))
	}
	if !ops.ValidRunLogDir(c.RunLogDir) {
		errs = append(errs, fmt.Errorf("--runlog-dir %q: want %s", ops.Truncate(c.RunLogDir, ops.MaxRunLogDirLength+8), ops.RunLogDirRule))
	}
	if _, err := protocol.NewSubjects(c.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("--prefix %q: want 1 to %d characters of [A-Za-z0-9_-]", c.Prefix, protocol.MaxTokenLength))
	}
	switch c.RequestLogLevel {
	case "trace", "debug", "info", "warn", "disabled":
	default:
		errs = append(errs, fmt.Errorf("--request-log-level %q: want trace, debug, info, warn or disabled", c.RequestLogLevel))
	}
	if c.ToolTimeout <= 0 || c.ApprovalTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--tool-timeout and --approval-timeout must be positive, got %s and %s", c.ToolTimeout, c.ApprovalTimeout))
	}
	if c.ApprovalMode != approvalPark && c.ApprovalMode != approvalWait {
		errs = append(errs, fmt.Errorf("--approval-mode %q: want %s or %s", c.ApprovalMode, approvalPark, approvalWait))
	}
	if c.ApprovalOnDeadline != tools.DeadlineDeny && c.ApprovalOnDeadline != tools.DeadlineApprove {
		errs = append(errs, fmt.Errorf("--approval-on-deadline %q: want %s or %s", c.ApprovalOnDeadline, tools.DeadlineDeny, tools.DeadlineApprove))
	}
	if c.ApprovalDeadline <= 0 || c.ApprovalSweep <= 0 {
		errs = append(errs, fmt.Errorf("--approval-deadline and --approval-sweep must be positive, got %s and %s", c.ApprovalDeadline, c.ApprovalSweep))
	}
	if _, err := parseToolTimeouts(c.ToolTimeouts); err != nil {
		errs = append(errs, err)
	}
	if c.NATSURL != "" && c.StoreDir != "" {
		errs = append(errs, errors.New("--store-dir is for the embedded server and cannot be used with --nats"))
	}
	if err := c.Credentials.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.cliCommands(); err != nil {
		errs = append(errs, fmt.Errorf("--cli, --cli-config: %w", err))
	}
	if c.openAIEnabled() {
		if _, err := openai.New(c.openAIConfig()); err != nil {
			errs = append(errs, fmt.Errorf("--openai-base-url, --openai-api-key: %w", err))
		}
	}
	return errors.Join(errs...)
}

// openAIEnabled reports whether the "openai" provider is configured.
func (c config) openAIEnabled() bool { return c.OpenAIBaseURL != "" || c.OpenAIAPIKey != "" }

// openAIConfig is the configuration of the "openai" provider.
func (c config) openAIConfig() openai.Config {
	return openai.Config{Name: openai.Name, BaseURL: c.OpenAIBaseURL, APIKey: c.OpenAIAPIKey}
}
