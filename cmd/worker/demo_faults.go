package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/cmd/internal/render"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
)

// The branches of the demo's second part.
const (
	demoRetryBranch = "demo-retry"
	demoLongBranch  = "demo-long"
	// demoLongExchanges is the length of the longer conversation: the
	// store's snapshot cadence (store.DefaultSnapshotEvents events).
	demoLongExchanges = 64
)

// demoDo runs one request of the demo and returns its result.
type demoDo func(verb, branch string, data any) (*ops.Result, error)

// runDemoFaults is the demo's second part: a model that fails once, a
// request no worker can read, and a conversation long enough to be
// snapshotted. reuse deletes its branches first (a persistent store).
func runDemoFaults(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, subj protocol.Subjects, do demoDo, reuse bool, out io.Writer) error {
	fmt.Fprintf(out, "\n── demo: when something goes wrong ──\n\n")
	if reuse {
		for _, b := range []string{demoRetryBranch, demoLongBranch} {
			if _, err := do("branch.delete", b, map[string]any{"purge": true}); err != nil && !isCode(err, ops.CodeBranchNotFound) {
				return err
			}
		}
	}

	// A temporary model failure: the worker hands the request back and
	// JetStream delivers it again after the backoff.
	flaky := map[string]any{
		"text":  "Answered on the second delivery.",
		"error": map[string]any{"message": "the model is overloaded (scripted)", "temporary": true, "attempts": 1},
	}
	if _, err := do("branch.create", "", map[string]any{
		"branch_id": demoRetryBranch, "chat_model": map[string]any{"provider": "scripted", "replies": []any{flaky}},
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "communicate     on %s, whose model fails once with a temporary error\n", demoRetryBranch)
	start := time.Now()
	res, err := do("communicate", demoRetryBranch, map[string]any{"instruction": "Are you there?"})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  → %s\n    (the first delivery failed and was handed back; JetStream delivered it again and it was answered after %s)\n",
		render.CompactValue(res.Value), time.Since(start).Round(100*time.Millisecond))

	// A request nobody can answer: not a CloudEvent, no id, no reply
	// address. It is dead-lettered instead of lost or retried forever.
	dlq, err := js.Stream(ctx, subj.DeadStream())
	if err != nil {
		return fmt.Errorf("dead letters: %w", err)
	}
	before, err := streamMsgs(ctx, dlq)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\npublish         %q on %s: not a CloudEvent, no id, no reply address\n", demoGarbage, subj.Op("communicate"))
	if err := nc.Publish(subj.Op("communicate"), []byte(demoGarbage)); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	deadline := time.Now().Add(demoTimeout)
	for {
		n, err := streamMsgs(ctx, dlq)
		if err != nil {
			return err
		}
		if n > before {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("the malformed request was not dead-lettered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(out, "  → dead-lettered in %s with code %s (see `publisher dlq list`)\n", subj.DeadStream(), protocol.CodeMalformedEvent)

	// A longer conversation: the store writes a snapshot every 64
	// events, so a worker that has not cached the branch reads the
	// snapshot and only the events after it.
	if _, err := do("branch.create", "", map[string]any{"branch_id": demoLongBranch, "chat_model": "scripted:echo"}); err != nil {
		return err
	}
	start = time.Now()
	for i := range demoLongExchanges {
		if _, err := do("communicate", demoLongBranch, map[string]any{"instruction": fmt.Sprintf("message %d", i+1)}); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\ncommunicate ×%d on %s, one after another, in %s\n", demoLongExchanges, demoLongBranch, time.Since(start).Round(time.Millisecond))
	kv, err := js.KeyValue(ctx, subj.BranchesBucket())
	if err != nil {
		return fmt.Errorf("branches bucket: %w", err)
	}
	snap, err := kv.Get(ctx, demoLongBranch)
	if err != nil {
		return fmt.Errorf("snapshot of %s: %w", demoLongBranch, err)
	}
	fmt.Fprintf(out, "  → snapshot of %d bytes in KV %s (revision %d); a worker that has not cached the branch\n    loads it and replays only the history events after it\n",
		len(snap.Value()), subj.BranchesBucket(), snap.Revision())
	return nil
}

// demoGarbage is the demo's malformed request.
const demoGarbage = "{this is not a CloudEvent"

// streamMsgs returns the number of messages stream holds now.
func streamMsgs(ctx context.Context, st jetstream.Stream) (uint64, error) {
	info, err := st.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream info: %w", err)
	}
	return info.State.Msgs, nil
}
