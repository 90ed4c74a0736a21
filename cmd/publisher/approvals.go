package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/lionbus/lionbus/cmd/internal/render"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// approvalsLong describes the approvals commands in their help.
const approvalsLong = `A worker run with --tools-approve parks every tool call it does not deny:
it records a pending approval (docs/approvals.md), frees itself and waits
for an answer. ID is the approval id (as list prints it).

  list      one line per approval (--all: decided ones too)
  show      the approval as JSON: tool, arguments, digest, deadline, decision
  approve   approve the call (--args JSON: run it with these arguments)
  deny      deny the call (--reason: what the model is told)

approve and deny publish the answer as the NATS user --as (default --user);
the server's permissions decide who may (deploy/README.md).`

// approvalsList is `publisher approvals list`.
func (a *app) approvalsList(fs *flag.FlagSet) func([]string) int {
	all := fs.Bool("all", false, "list decided approvals too")
	return func(args []string) int {
		if len(args) != 0 {
			return usageError(a.stderr, fmt.Errorf("approvals list takes no argument, got %d", len(args)))
		}
		return withClient(a.ctx, a.o, a.stderr, func(ctx context.Context, cl *client.Client) int {
			list, err := cl.Approvals(ctx, !*all)
			if err != nil {
				fmt.Fprintf(a.stderr, "publisher: approvals list: %v\n", err)
				return exitNoAnswer
			}
			printApprovals(a.o.JSON, list, a.stdout)
			return exitOK
		})
	}
}

// approvalsShow is `publisher approvals show ID`.
func (a *app) approvalsShow(*flag.FlagSet) func([]string) int {
	return func(args []string) int {
		if code := approvalArg(args, "show", a.stderr); code != exitOK {
			return code
		}
		return withClient(a.ctx, a.o, a.stderr, func(ctx context.Context, cl *client.Client) int {
			ap, err := cl.Approval(ctx, args[0])
			if err != nil {
				fmt.Fprintf(a.stderr, "publisher: approvals show: %v\n", err)
				if errors.Is(err, client.ErrNoApproval) {
					return exitFailed
				}
				return exitNoAnswer
			}
			b, _ := json.MarshalIndent(ap, "", "  ")
			fmt.Fprintln(a.stdout, string(b))
			return exitOK
		})
	}
}

// approvalsAnswer is `publisher approvals approve|deny ID`.
func (a *app) approvalsAnswer(approve bool) func(fs *flag.FlagSet) func([]string) int {
	return func(fs *flag.FlagSet) func([]string) int {
		as := fs.String("as", "", "the NATS user the answer is published as (default --user)")
		reason := fs.String("reason", "", "why (a denial's reason reaches the model)")
		wait := fs.Duration("wait", 10*time.Second, "how long to wait for a worker to apply the answer")
		var argsJSON *string
		if approve {
			argsJSON = fs.String("args", "", "edited arguments (a JSON object) the call runs with instead of its own")
		}
		verb := "deny"
		if approve {
			verb = "approve"
		}
		return func(args []string) int {
			if code := approvalArg(args, verb, a.stderr); code != exitOK {
				return code
			}
			ans := client.Answer{Approve: approve, Reason: *reason, User: *as, Wait: *wait}
			if ans.User == "" {
				ans.User = a.o.User
			}
			if !protocol.ValidToken(ans.User) {
				return usageError(a.stderr, errors.New("approvals "+verb+": --as USER (or --user) is required: the answer subject ends with the approver's user name"))
			}
			if argsJSON != nil && *argsJSON != "" {
				if err := json.Unmarshal([]byte(*argsJSON), &ans.Arguments); err != nil || ans.Arguments == nil {
					return usageError(a.stderr, fmt.Errorf("approvals approve --args: want a JSON object (%v)", err))
				}
			}
			return withClient(a.ctx, a.o, a.stderr, func(ctx context.Context, cl *client.Client) int {
				answer, err := cl.AnswerApproval(ctx, args[0], ans)
				var refused *wire.ApprovalRefusedError
				switch {
				case errors.As(err, &refused):
					fmt.Fprintf(a.stderr, "publisher: approvals %s: %s: %s\n", verb, refused.Code, refused.Message)
					return exitFailed
				case errors.Is(err, client.ErrAnswerQueued):
					fmt.Fprintf(a.stdout, "answer %s stored; a worker applies it when one runs\n", answer)
					return exitOK
				case errors.Is(err, client.ErrNoApproval):
					fmt.Fprintf(a.stderr, "publisher: approvals %s: %v\n", verb, err)
					return exitFailed
				case err != nil:
					fmt.Fprintf(a.stderr, "publisher: approvals %s: %v\n", verb, err)
					return exitNoAnswer
				}
				done := "denied"
				if approve {
					done = "approved"
				}
				fmt.Fprintf(a.stdout, "approval %s: %s (answer %s); its request resumes\n", args[0], done, answer)
				return exitOK
			})
		}
	}
}

// approvalArg checks the one argument, an approval id, of sub.
func approvalArg(args []string, sub string, stderr io.Writer) int {
	if len(args) != 1 {
		return usageError(stderr, fmt.Errorf("approvals %s takes 1 argument (an approval id), got %d", sub, len(args)))
	}
	if !protocol.ValidToken(args[0]) {
		return usageError(stderr, fmt.Errorf("approval id %q: want 1 to %d characters of [A-Za-z0-9_-]", render.Clip(args[0], 80), protocol.MaxTokenLength))
	}
	return exitOK
}

func printApprovals(asJSON bool, list []wire.Approval, w io.Writer) {
	if asJSON {
		if list == nil {
			list = []wire.Approval{}
		}
		b, _ := json.MarshalIndent(list, "", "  ")
		fmt.Fprintln(w, string(b))
		return
	}
	if len(list) == 0 {
		fmt.Fprintln(w, "no approvals")
		return
	}
	for _, ap := range list {
		args, _ := json.Marshal(ap.Arguments)
		fmt.Fprintf(w, "%s  %-8s  %-16s  request %s  deadline %s  %s\n", ap.ID, ap.State, ap.Tool, ap.RequestID,
			ap.Deadline.UTC().Format(time.RFC3339), render.Clip(string(args), 60))
	}
}
