package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/wire"
)

// batchLong describes the batch commands in their help.
const batchLong = `Batches (docs/batch.md): thousands of items, each an ordinary request on a
branch of its own, run by the workers at the batch's concurrency, with
counts, results in completion order, retry of what failed, cancel and a
deadline.

  submit FILE   submit a JSONL file ("-": standard input), one item a line:
                {"custom_id", "verb", "data"} or the OpenAI Batch shape
                {"custom_id", "method": "POST", "url": "/v1/chat/completions",
                "body"}; prints the batch id. The same file and options give
                the same id, so running it again after a crash submits nothing
                twice
  get ID        the batch's record (state, counts) as JSON
  watch ID      a live progress bar (plain lines when stdout is no terminal)
                until the batch ends
  results ID    the results as JSONL, in completion order (--follow: as they
                come, until the batch ends)
  cancel ID     start no new item, cancel those in flight
  retry ID      run the failed and expired items again (--status)
  max-cost ID USD
                set the batch's cost ceiling (0: none): once its finished
                items cost that much by the workers' price table, no new
                item starts; raise it and retry --status canceled to go on
  list          one line per batch`

// batchSubmit is `publisher batch submit FILE`.
func (a *app) batchSubmit(fs *flag.FlagSet) func([]string) int {
	id := fs.String("id", "", "batch id (default: derived from the file and the options)")
	template := fs.String("template", "", "branch each item's branch is cloned from (default: an empty branch per item)")
	concurrency := fs.Int("concurrency", wire.DefaultBatchConcurrency, fmt.Sprintf("items in flight at most, over the fleet (1 to %d)", wire.MaxBatchConcurrency))
	deadline := fs.String("deadline", "", "when the items not started expire: a duration from now (90m) or an RFC 3339 time")
	keep := fs.Bool("keep-branches", false, "keep each item's branch (default: deleted once its result is stored)")
	maxCost := fs.Float64("max-cost-usd", 0, "the batch's cost ceiling in US dollars: no item starts once the finished ones cost that much (0: none)")
	watch := fs.Bool("watch", false, "watch the batch after submitting it")
	return func(args []string) int {
		if len(args) != 1 {
			return usageError(a.stderr, fmt.Errorf("batch submit takes one argument, the JSONL file (- for standard input), got %d", len(args)))
		}
		spec := client.BatchSpec{ID: *id, TemplateBranch: *template, Concurrency: *concurrency, KeepBranches: *keep, MaxCostUSD: *maxCost}
		if *concurrency < 1 || *concurrency > wire.MaxBatchConcurrency {
			return usageError(a.stderr, fmt.Errorf("--concurrency %d: want 1 to %d", *concurrency, wire.MaxBatchConcurrency))
		}
		if *deadline != "" {
			if d, err := time.ParseDuration(*deadline); err == nil && d > 0 {
				spec.Deadline = time.Now().Add(d)
			} else if t, err := time.Parse(time.RFC3339, *deadline); err == nil {
				spec.Deadline = t
			} else {
				return usageError(a.stderr, fmt.Errorf("--deadline %q: want a positive duration or an RFC 3339 time", *deadline))
			}
		}
		open := func() (io.ReadCloser, error) { return os.Open(args[0]) }
		if args[0] == "-" {
			raw, err := io.ReadAll(io.LimitReader(a.stdin, maxDataBytes+1))
			if err != nil {
				return usageError(a.stderr, err)
			}
			if len(raw) > maxDataBytes {
				return usageError(a.stderr, fmt.Errorf("standard input is over %d bytes: give a file", maxDataBytes))
			}
			open = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
		}
		if spec.ID == "" {
			if !spec.Deadline.IsZero() {
				return usageError(a.stderr, errors.New("--deadline needs --id: a deadline from now would give every run another id"))
			}
			f, err := open()
			if err != nil {
				return usageError(a.stderr, err)
			}
			spec.ID, err = client.BatchID(f, spec)
			f.Close()
			if err != nil {
				return usageError(a.stderr, err)
			}
		}
		f, err := open()
		if err != nil {
			return usageError(a.stderr, err)
		}
		defer f.Close()
		code := withClient(a.ctx, a.o, a.stderr, func(ctx context.Context, cl *client.Client) int {
			b, err := cl.SubmitBatch(ctx, spec, f)
			if errors.Is(err, client.ErrBadBatchInput) || errors.Is(err, client.ErrInvalidOption) {
				return usageError(a.stderr, err)
			}
			if err != nil {
				fmt.Fprintf(a.stderr, "publisher: batch submit: %v\n", err)
				return exitNoAnswer
			}
			if a.o.JSON {
				_ = printJSON(a.stdout, b)
			} else {
				fmt.Fprintf(a.stdout, "%s\t%d items\t%s\n", b.ID, b.Total, b.State)
			}
			return exitOK
		})
		if code != exitOK || !*watch {
			return code
		}
		return a.runBatchWatch(spec.ID)
	}
}

// batchID checks the one argument of a batch command.
func batchID(sub string, args []string) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("batch %s takes one argument, the batch id, got %d", sub, len(args))
	}
	if !wire.ValidBatchID(args[0]) {
		return "", fmt.Errorf("batch id %q: want 1 to %d characters of [A-Za-z0-9_-]", args[0], wire.MaxBatchIDLength)
	}
	return args[0], nil
}

// batchFail prints err and returns its exit code.
func (a *app) batchFail(sub string, err error) int {
	fmt.Fprintf(a.stderr, "publisher: batch %s: %v\n", sub, err)
	switch {
	case errors.Is(err, client.ErrNoBatch), errors.Is(err, client.ErrBatchNotEnded):
		return exitFailed
	case errors.Is(err, client.ErrInvalidOption):
		return exitUsage
	}
	return exitNoAnswer
}

// batchCmd is `publisher batch get|cancel ID`.
func (a *app) batchCmd(sub string) func(*flag.FlagSet) func([]string) int {
	return func(*flag.FlagSet) func([]string) int {
		return func(args []string) int {
			id, err := batchID(sub, args)
			if err != nil {
				return usageError(a.stderr, err)
			}
			return withClient(a.ctx, a.o, a.stderr, func(ctx context.Context, cl *client.Client) int {
				var b *wire.Batch
				if sub == "cancel" {
					b, err = cl.CancelBatch(ctx, id)
				} else {
					b, err = cl.Batch(ctx, id)
				}
				if err != nil {
					return a.batchFail(sub, err)
				}
				_ = printJSON(a.stdout, b)
				return exitOK
			})
		}
	}
}

// batchRetry is `publisher batch retry ID`.
func (a *app) batchRetry(fs *flag.FlagSet) func([]string) int {
	statuses := fs.String("status", "failed,expired", "the statuses to run again, comma-separated: failed, expired, canceled")
	return func(args []string) int {
		id, err := batchID("retry", args)
		if err != nil {
			return usageError(a.stderr, err)
		}
		return withClient(a.ctx, a.o, a.stderr, func(ctx context.Context, cl *client.Client) int {
			b, err := cl.RetryBatch(ctx, id, strings.Split(*statuses, ",")...)
			if err != nil {
				return a.batchFail("retry", err)
			}
			_ = printJSON(a.stdout, b)
			return exitOK
		})
	}
}

// batchMaxCost is `publisher batch max-cost ID USD`.
func (a *app) batchMaxCost(*flag.FlagSet) func([]string) int {
	return func(args []string) int {
		if len(args) != 2 {
			return usageError(a.stderr, fmt.Errorf("batch max-cost takes two arguments, the batch id and the ceiling in US dollars, got %d", len(args)))
		}
		id, err := batchID("max-cost", args[:1])
		if err != nil {
			return usageError(a.stderr, err)
		}
		usd, err := strconv.ParseFloat(args[1], 64)
		if err != nil {
			return usageError(a.stderr, fmt.Errorf("batch max-cost: %q is not a number of US dollars", args[1]))
		}
		return withClient(a.ctx, a.o, a.stderr, func(ctx context.Context, cl *client.Client) int {
			b, err := cl.SetBatchMaxCost(ctx, id, usd)
			if err != nil {
				return a.batchFail("max-cost", err)
			}
			_ = printJSON(a.stdout, b)
			return exitOK
		})
	}
}

// batchList is `publisher batch list`.
func (a *app) batchList(*flag.FlagSet) func([]string) int {
	return func(args []string) int {
		if len(args) != 0 {
			return usageError(a.stderr, fmt.Errorf("batch list takes no argument, got %d", len(args)))
		}
		return withClient(a.ctx, a.o, a.stderr, func(ctx context.Context, cl *client.Client) int {
			list, err := cl.Batches(ctx)
			if err != nil {
				return a.batchFail("list", err)
			}
			for _, b := range list {
				if a.o.JSON {
					_ = printJSON(a.stdout, b)
					continue
				}
				fmt.Fprintf(a.stdout, "%s\t%s\tround %d\t%s\t%s\t%s\n", b.ID, b.State, b.Round, countsLine(b.Counts), costLine(&b), b.Created.Format(time.RFC3339))
			}
			return exitOK
		})
	}
}

// batchResults is `publisher batch results ID`.
func (a *app) batchResults(fs *flag.FlagSet) func([]string) int {
	after := fs.Uint64("after", 0, "start after this stream sequence (each result's seq is printed with --seq)")
	follow := fs.Bool("follow", false, "go on as items finish, until the batch ends")
	seq := fs.Bool("seq", false, `add each result's stream sequence as "seq"`)
	return func(args []string) int {
		id, err := batchID("results", args)
		if err != nil {
			return usageError(a.stderr, err)
		}
		return a.untimed(func(ctx context.Context, cl *client.Client) int {
			enc := json.NewEncoder(a.stdout)
			err := cl.BatchResults(ctx, id, *after, *follow, func(r wire.BatchResult) error {
				if *seq {
					return enc.Encode(struct {
						wire.BatchResult
						Seq uint64 `json:"seq"`
					}{r, r.Seq})
				}
				return enc.Encode(r)
			})
			if err != nil {
				return a.batchFail("results", err)
			}
			return exitOK
		})
	}
}

// batchWatch is `publisher batch watch ID`.
func (a *app) batchWatch(*flag.FlagSet) func([]string) int {
	return func(args []string) int {
		id, err := batchID("watch", args)
		if err != nil {
			return usageError(a.stderr, err)
		}
		return a.runBatchWatch(id)
	}
}

// untimed connects within --timeout, then runs do without a deadline
// (until the command's context ends: Ctrl-C).
func (a *app) untimed(do func(context.Context, *client.Client) int) int {
	cctx, cancel := context.WithTimeout(a.ctx, a.o.Timeout)
	cl, nc, code := connect(cctx, a.o, a.stderr)
	cancel()
	if cl == nil {
		return code
	}
	defer nc.Close()
	return do(a.ctx, cl)
}

func (a *app) runBatchWatch(id string) int {
	return a.untimed(func(ctx context.Context, cl *client.Client) int {
		p := newBatchProgress(a.stdout)
		err := cl.WatchBatch(ctx, id, func(b *wire.Batch) error {
			p.show(b)
			return nil
		})
		p.done()
		if err != nil {
			return a.batchFail("watch", err)
		}
		return exitOK
	})
}

// countsLine is a batch's counts in one line.
func countsLine(c wire.BatchCounts) string {
	return fmt.Sprintf("%d/%d done: %d succeeded, %d failed, %d canceled, %d expired; %d running, %d queued",
		c.Finished(), c.Total, c.Succeeded, c.Failed, c.Canceled, c.Expired, c.Running, c.Queued)
}

// costLine is what a batch cost so far, and its ceiling.
func costLine(b *wire.Batch) string {
	s := fmt.Sprintf("$%.6f, %d tokens", b.Usage.CostUSD, b.Usage.TotalTokens)
	if b.MaxCostUSD > 0 {
		s += fmt.Sprintf(" (ceiling $%.6f", b.MaxCostUSD)
		if b.CostCeilingReached {
			s += ", reached"
		}
		s += ")"
	}
	return s
}

// batchProgress shows a batch's progress: a progress bar with rate and
// ETA on a terminal, else a plain line per change (at most one a second,
// and the last).
type batchProgress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	start time.Time
	first int // items finished when watching began
	last  time.Time
	line  string
}

func newBatchProgress(w io.Writer) *batchProgress {
	p := &batchProgress{w: w, start: time.Now(), first: -1}
	if f, ok := w.(*os.File); ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) {
		p.bar = progressbar.NewOptions(1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("items"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionFullWidth(),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
	}
	return p
}

func (p *batchProgress) show(b *wire.Batch) {
	c := b.Counts
	if p.first < 0 {
		p.first = c.Finished()
	}
	if p.bar != nil {
		p.bar.ChangeMax(c.Total)
		p.bar.Describe(fmt.Sprintf("%s %s (%d ok, %d failed, %d running; $%.4f)", b.ID, b.State, c.Succeeded, c.Failed+c.Canceled+c.Expired, c.Running, b.Usage.CostUSD))
		_ = p.bar.Set(c.Finished())
		return
	}
	final := wire.BatchFinal(b.State)
	if !final && time.Since(p.last) < time.Second {
		return
	}
	p.last = time.Now()
	rate := float64(c.Finished()-p.first) / max(time.Since(p.start).Seconds(), 0.001)
	eta := "?"
	if rate > 0 {
		eta = time.Duration(float64(c.Total-c.Finished()) / rate * float64(time.Second)).Round(time.Second).String()
	}
	line := fmt.Sprintf("%s %s: %s; %s; %.1f items/s, eta %s", b.ID, b.State, countsLine(c), costLine(b), rate, eta)
	if final {
		line = fmt.Sprintf("%s %s: %s; %s", b.ID, b.State, countsLine(c), costLine(b))
	}
	if line != p.line {
		fmt.Fprintln(p.w, line)
		p.line = line
	}
}

func (p *batchProgress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}
