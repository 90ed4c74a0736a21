package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/examples/tools/demotools"
	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/tools/toolschema"
)

// workerTools is the worker's tool wiring: the NATS invoker over the tool
// registry, and the governance policy, both set up on the service's
// connection once bus.Start has made it. A call that arrives before then
// waits for it (or for its context to end).
type workerTools struct {
	cfg       config
	ready     chan struct{}
	inv       *tools.Invoker
	policy    *tools.Policy
	approvals *tools.Approvals // --approval-mode park; nil otherwise
}

// Values of --approval-mode.
const (
	approvalPark = "park"
	approvalWait = "wait"
)

// parks reports whether approvals park the request (--tools-approve with
// --approval-mode park).
func (w *workerTools) parks() bool { return w.cfg.ToolsApprove && w.cfg.ApprovalMode == approvalPark }

func newWorkerTools(cfg config) *workerTools {
	return &workerTools{cfg: cfg, ready: make(chan struct{})}
}

// governed reports whether the worker gates tool calls beyond each
// branch's list of tools.
func (w *workerTools) governed() bool { return w.cfg.ToolsDeny != "" || w.cfg.ToolsApprove }

// configure has bc's worker call tools through w (journaled by wj), gate
// them with w's policy, and keep the requests it parks.
func (w *workerTools) configure(bc *bus.Config, wj *workerJournal) {
	bc.Tools = wj.tools(w)
	if w.governed() {
		bc.Authorizer = w
	}
	if w.parks() {
		bc.Worker.OnParked = w.keep
	}
}

// attach opens the registry and makes the invoker and the policy on svc's
// connection.
func (w *workerTools) attach(ctx context.Context, svc *bus.Service, log zerolog.Logger) error {
	js, err := jetstream.New(svc.Conn())
	if err != nil {
		return err
	}
	tl := log.With().Str("component", "tools").Logger()
	reg, err := tools.OpenRegistry(ctx, js, w.cfg.Prefix, tl, tools.WithRegistryCompiler(toolschema.Compile))
	if err != nil {
		return err
	}
	timeouts, err := parseToolTimeouts(w.cfg.ToolTimeouts)
	if err != nil {
		return err
	}
	inv, err := tools.NewInvoker(svc.Conn(), tools.InvokerConfig{
		Registry: reg, Prefix: w.cfg.Prefix, Timeout: w.cfg.ToolTimeout, Timeouts: timeouts, Source: "/lionbus/worker/" + w.cfg.Name,
	})
	if err != nil {
		return err
	}
	w.inv = inv
	w.policy = &tools.Policy{
		Denied: splitList(w.cfg.ToolsDeny), Approve: w.cfg.ToolsApprove, ApprovalTimeout: w.cfg.ApprovalTimeout,
		Conn: svc.Conn(), Prefix: w.cfg.Prefix,
	}
	if w.parks() {
		w.approvals, err = tools.OpenApprovals(ctx, svc.Conn(), js, tools.ApprovalsConfig{
			Prefix: w.cfg.Prefix, Deadline: w.cfg.ApprovalDeadline, OnDeadline: w.cfg.ApprovalOnDeadline,
			Sweep: w.cfg.ApprovalSweep, Source: "/lionbus/worker/" + w.cfg.Name, Denied: splitList(w.cfg.ToolsDeny),
			MaxValueBytes: int(svc.Conn().MaxPayload()), Logger: log.With().Str("component", "approvals").Logger(),
		})
		if err != nil {
			return err
		}
		go func() {
			if err := w.approvals.Serve(ctx); err != nil {
				log.Error().Err(err).Msg("approvals: answers are not read by this worker")
			}
		}()
	}
	close(w.ready)
	return nil
}

// keep keeps a request parked for an approval (worker.Config.OnParked).
func (w *workerTools) keep(ctx context.Context, req worker.ParkedRequest) error {
	if err := w.wait(ctx); err != nil {
		return err
	}
	if w.approvals == nil {
		return fmt.Errorf("request %s parked, but approvals do not park (--approval-mode %s)", req.ID, w.cfg.ApprovalMode)
	}
	return w.approvals.Keep(ctx, req.Parked.ApprovalID, req.ID, req.Subject, req.Header, req.Data)
}

// wait waits until attach is done.
func (w *workerTools) wait(ctx context.Context) error {
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("tools not ready: %w", ctx.Err())
	}
}

// Invoke runs call through the NATS invoker.
func (w *workerTools) Invoke(ctx context.Context, call ops.ToolInvocation) (ops.ToolOutcome, error) {
	if err := w.wait(ctx); err != nil {
		return ops.ToolOutcome{}, err
	}
	if w.approvals != nil {
		call.Arguments = w.approvals.Arguments(call)
	}
	return w.inv.Invoke(ctx, call)
}

// DescribeTools describes tools from the registry.
func (w *workerTools) DescribeTools(ctx context.Context, names []string) []ops.ToolSpec {
	if w.wait(ctx) != nil {
		return nil
	}
	return w.inv.DescribeTools(ctx, names)
}

// Authorize applies the policy (--tools-deny, --tools-approve).
func (w *workerTools) Authorize(ctx context.Context, call ops.ToolInvocation) (ops.Decision, error) {
	if err := w.wait(ctx); err != nil {
		return ops.Decision{}, err
	}
	if w.approvals != nil {
		return w.approvals.Authorize(ctx, call)
	}
	return w.policy.Authorize(ctx, call)
}

// parseToolTimeouts parses --tool-timeouts: name=duration pairs, comma
// separated, each duration positive.
func parseToolTimeouts(s string) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, item := range splitList(s) {
		name, d, ok := strings.Cut(item, "=")
		dur, err := time.ParseDuration(d)
		if !ok || !ops.ValidID(name) || err != nil || dur <= 0 {
			return nil, fmt.Errorf("--tool-timeouts: %q is not tool=duration (e.g. refund=1m)", item)
		}
		out[name] = dur
	}
	return out, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// startDemoTools serves the two example tool services (calculator and
// notes, examples/tools) on svc's connection, as separate services would,
// and returns a function that stops them.
func startDemoTools(ctx context.Context, svc *bus.Service, prefix string, log zerolog.Logger) (stop func(), err error) {
	js, err := jetstream.New(svc.Conn())
	if err != nil {
		return nil, err
	}
	notes, err := demotools.Notes(ctx, js, prefix)
	if err != nil {
		return nil, err
	}
	var started []*tools.Service
	stop = func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, s := range started {
			_ = s.Stop(sctx)
		}
	}
	for _, cfg := range []tools.ServiceConfig{demotools.Calculator(prefix), notes} {
		cfg.Logger = log
		s, err := tools.Serve(ctx, svc.Conn(), cfg)
		if err != nil {
			stop()
			return nil, fmt.Errorf("demo tool service %s: %w", cfg.Name, err)
		}
		started = append(started, s)
	}
	return stop, nil
}
