package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
	"github.com/lionbus/lionbus/pkg/wire"
)

// A run on a CLI that resumes sessions (the fake Claude Code), its worker
// process SIGKILLed mid-stream: the redelivery, on a second worker
// process, runs the CLI with --resume and the session the first CLI
// named, not the instruction again; the chunk stream goes on from where it
// stopped (every seq once, no gap, the instruction's chunk once); the
// branch records the instruction once, what the dead attempt streamed and
// the resumed session's answer, and keeps the session.
func TestKill_run_resumes_the_CLI_session_after_its_worker_dies(t *testing.T) {
	t.Parallel()
	const ackWait = 2 * time.Second
	b := bustest.New(t, provision.Config{AckWait: ackWait, LeaseTTL: ackWait})
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "clis.json")
	raw, err := json.Marshal([]map[string]any{{"name": "fake", "command": []string{clitest.Build(t)},
		"env": []string{"FAKECLI_DIR=" + dir}, "format": "claude"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--nats", b.Srv.ClientURL(), "--cli-config", cfg, "--log-level", "info"}
	first := startMainProcess(t, "first", args...)

	ctx := bustest.Ctx(t)
	if _, err := b.Client.Do(ctx, "branch.create", "", map[string]any{"branch_id": "b1", "chat_model": "cli:fake"}); err != nil {
		t.Fatal(err)
	}
	// GATE: the fake CLI prints half its session and waits.
	id, err := b.Client.Submit(ctx, "run", "b1", map[string]any{"instruction": "list the files GATE"})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := b.JS.Stream(ctx, b.Res.Subjects.ChunksStream())
	if err != nil {
		t.Fatal(err)
	}
	subject := b.Res.Subjects.Chunk(id)
	stored := func() uint64 {
		info, err := chunks.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			return 0
		}
		return info.State.Subjects[subject]
	}
	const half = 6 // the instruction and the first five lines
	waitFor(t, 30*time.Second, "half the chunks", func() bool { return stored() >= half })
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	recs := clitest.Records(t, dir)
	if len(recs) != 1 {
		t.Fatalf("%d CLI processes before the kill, want 1", len(recs))
	}
	// The first CLI waited at its gate: it ends with its worker (the
	// reaper dies with it and ends the CLI's tree), it does not go on
	// beside the resumed session.
	t.Cleanup(func() { _ = syscall.Kill(recs[0].PID, syscall.SIGKILL) })
	if !clitest.WaitGone(recs[0].PID, 20*time.Second) {
		t.Errorf("the killed worker's CLI %d still runs", recs[0].PID)
	}

	second := startMainProcess(t, "second", args...)
	reply, ok := b.AwaitWithin(t, id, time.Minute)
	if !ok {
		t.Fatalf("no answer after the kill\nsecond worker:\n%s", second.logs)
	}
	res, err := reply.Result()
	if err != nil {
		t.Fatal(err)
	}

	recs = clitest.Records(t, dir)
	if len(recs) != 2 {
		t.Fatalf("%d CLI processes, want 2", len(recs))
	}
	var resumed clitest.Record
	for _, r := range recs {
		if _, ok := r.Arg("--resume"); ok {
			resumed = r
		}
	}
	wantSession := fmt.Sprintf("sess-%d", firstCLI(recs).PID)
	if got, ok := resumed.Arg("--resume"); !ok || got != wantSession {
		t.Fatalf("the redelivery's CLI argv %q, want --resume %s", resumed.Argv, wantSession)
	}
	if p, _ := resumed.Arg("-p"); p != ops.ResumePrompt {
		t.Errorf("the resumed CLI's prompt %q, want the resume prompt", p)
	}

	// The chunk stream: every seq once, in order, the instruction once,
	// one resume marker.
	cons, err := b.JS.OrderedConsumer(ctx, b.Res.Subjects.ChunksStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	n := stored()
	batch, err := cons.Fetch(int(n))
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	instructions, markers := 0, 0
	for m := range batch.Messages() {
		var ev struct {
			Data wire.Chunk `json:"data"`
		}
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ev.Data.Seq)
		if _, ok := ev.Data.Metadata["instruction"]; ok {
			instructions++
		}
		if _, ok := ev.Data.Metadata[ops.MetaResumed]; ok {
			markers++
		}
	}
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("chunk seqs %v: a gap or a repeat at %d", seqs, i+1)
		}
	}
	if instructions != 1 || markers != 1 || uint64(len(seqs)) != n || n <= half {
		t.Errorf("%d chunks (%d stored): %d instruction chunks, %d resume markers; want 1 and 1 after the %d of the dead attempt",
			len(seqs), n, instructions, markers, half)
	}

	var val ops.RunValue
	if err := json.Unmarshal(res.Value, &val); err != nil {
		t.Fatal(err)
	}
	if val.SessionID != wantSession || val.Chunks != n || len(val.Responses) < 2 {
		t.Errorf("value: session %q, %d chunks, responses %q; want %s, %d chunks, the dead attempt's response and the resumed one's",
			val.SessionID, val.Chunks, val.Responses, wantSession, n)
	}
	ins, resp := 0, 0
	var session string
	for _, ev := range b.History(t, "b1") {
		for _, m := range ev.Messages {
			switch m.Kind {
			case history.KindInstruction:
				ins++
			case history.KindAssistantResponse:
				resp++
			}
		}
		if ev.Settings != nil && ev.Settings.ProviderSession != "" {
			session = ev.Settings.ProviderSession
		}
	}
	if ins != 1 || resp != len(val.Responses) || session != wantSession {
		t.Errorf("history: %d instructions, %d responses, session %q; want 1, %d, %s", ins, resp, session, len(val.Responses), wantSession)
	}
	if !strings.Contains(second.logs.String(), "resumes its CLI session") {
		t.Errorf("the second worker does not say it resumed:\n%s", second.logs)
	}
}

// firstCLI returns the record of the CLI started without --resume.
func firstCLI(recs []clitest.Record) clitest.Record {
	for _, r := range recs {
		if _, ok := r.Arg("--resume"); !ok {
			return r
		}
	}
	return clitest.Record{}
}
