package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lionbus/lionbus/cmd/internal/render"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// dlqLong describes the dlq commands in their help.
const dlqLong = `The dead-letter stream keeps the requests that failed on every delivery or
could not be answered, with the reason. KEY is the request id, or seq-N for
a request whose id could not be read (as list prints it).

  list     one line per dead letter, oldest first
  show     the reason, the request's headers and its body
  retry    publish the request again as a new request (a new id, printed;
           the extension retryof names the original) and remove the entry
  delete   remove the entry`

// dlqList is `publisher dlq list`.
func (a *app) dlqList(fs *flag.FlagSet) func([]string) int {
	limit := fs.Int("limit", 100, fmt.Sprintf("list at most this many (at most %d)", client.MaxDeadLetters))
	return func(args []string) int {
		return runDLQ(a.ctx, a.o, "list", *limit, args, a.stdout, a.stderr)
	}
}

// dlqKey is `publisher dlq show|retry|delete KEY`.
func (a *app) dlqKey(sub string) func(fs *flag.FlagSet) func([]string) int {
	return func(*flag.FlagSet) func([]string) int {
		return func(args []string) int {
			return runDLQ(a.ctx, a.o, sub, 0, args, a.stdout, a.stderr)
		}
	}
}

// runDLQ runs dlq subcommand sub with its arguments rest.
func runDLQ(ctx context.Context, o *options, sub string, limit int, rest []string, stdout, stderr io.Writer) int {
	want := 1
	if sub == "list" {
		want = 0
	}
	if len(rest) != want {
		return usageError(stderr, fmt.Errorf("dlq %s takes %d argument(s), got %d", sub, want, len(rest)))
	}
	if want == 1 && !protocol.ValidToken(rest[0]) {
		return usageError(stderr, fmt.Errorf("dead-letter key %q: want 1 to %d characters of [A-Za-z0-9_-]", rest[0], protocol.MaxTokenLength))
	}
	return withClient(ctx, o, stderr, func(ctx context.Context, cl *client.Client) int {
		fail := func(err error) int {
			fmt.Fprintf(stderr, "publisher: dlq %s: %v\n", sub, err)
			if errors.Is(err, client.ErrNoDeadLetter) || errors.Is(err, client.ErrNotRetryable) {
				return exitFailed
			}
			return exitNoAnswer
		}
		switch sub {
		case "list":
			list, err := cl.DeadLetters(ctx, limit)
			if err != nil {
				return fail(err)
			}
			printDeadLetters(o.JSON, o.Prefix, list, stdout)
		case "show":
			d, err := cl.DeadLetter(ctx, rest[0])
			if err != nil {
				return fail(err)
			}
			printDeadLetter(o.JSON, d, stdout)
		case "retry":
			id, err := cl.RetryDeadLetter(ctx, rest[0])
			if err != nil {
				return fail(err)
			}
			fmt.Fprintf(stdout, "%s retried as request %s ('publisher result --wait %s' waits for its answer)\n", rest[0], id, id)
		case "delete":
			if err := cl.DeleteDeadLetter(ctx, rest[0]); err != nil {
				return fail(err)
			}
			fmt.Fprintf(stdout, "dead letter %s deleted\n", rest[0])
		}
		return exitOK
	})
}

// deadLetterJSON is the JSON form of a dead letter printed with --json.
type deadLetterJSON struct {
	Key       string              `json:"key"`
	RequestID string              `json:"request_id,omitempty"`
	Reason    string              `json:"reason"`
	Error     string              `json:"error"`
	Subject   string              `json:"subject"`
	Attempts  int                 `json:"attempts"`
	OpsSeq    uint64              `json:"ops_seq"`
	Time      time.Time           `json:"time"`
	Answered  bool                `json:"answered"`
	Header    map[string][]string `json:"header,omitempty"`
	Body      string              `json:"body,omitempty"`
}

func toJSON(d *protocol.DeadLetter, full bool) deadLetterJSON {
	j := deadLetterJSON{Key: d.Key, RequestID: d.RequestID, Reason: string(d.Reason), Error: d.Error,
		Subject: d.Subject, Attempts: d.Attempts, OpsSeq: d.OpsSeq, Time: d.Time, Answered: d.Answered}
	if full {
		j.Header, j.Body = d.Header, string(d.Data)
	}
	return j
}

func printDeadLetters(asJSON bool, prefix string, list []*protocol.DeadLetter, w io.Writer) {
	if asJSON {
		out := make([]deadLetterJSON, 0, len(list))
		for _, d := range list {
			out = append(out, toJSON(d, false))
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(w, string(b))
		return
	}
	if len(list) == 0 {
		fmt.Fprintln(w, "no dead letters")
		return
	}
	for _, d := range list {
		fmt.Fprintf(w, "%s  %-36s  %-24s  %-18s  %d deliveries  %s\n",
			d.Time.UTC().Format(time.RFC3339), d.Key, strings.TrimPrefix(d.Subject, prefix+".ops."), d.Reason, d.Attempts, render.Clip(d.Error, 80))
	}
}

func printDeadLetter(asJSON bool, d *protocol.DeadLetter, w io.Writer) {
	if asJSON {
		b, _ := json.MarshalIndent(toJSON(d, true), "", "  ")
		fmt.Fprintln(w, string(b))
		return
	}
	fmt.Fprintf(w, "key:       %s\nrequest:   %s\nsubject:   %s\nreason:    %s\nerror:     %s\nattempts:  %d\nanswered:  %t\ntime:      %s\nops seq:   %d\n",
		d.Key, d.RequestID, d.Subject, d.Reason, d.Error, d.Attempts, d.Answered, d.Time.UTC().Format(time.RFC3339Nano), d.OpsSeq)
	keys := make([]string, 0, len(d.Header))
	for k := range d.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "header:    %s: %s\n", k, strings.Join(d.Header[k], ", "))
	}
	fmt.Fprintf(w, "body:\n%s\n", d.Data)
}
