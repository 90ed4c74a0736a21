package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestRun_quick runs the harness with tiny settings and checks that the
// report has every section and that lionbus answered every request, with
// no repeated model call in the sequential phases.
func TestRun_quick(t *testing.T) {
	cfg, rep, report := runWith(t, "-quick", "-clients", "1,1", "-duration", "200ms", "-warmup", "50ms",
		"-lengths", "2,4", "-samples", "3", "-hot-clients", "4", "-hot-requests", "2")
	for _, want := range []string{
		"# lionbus request cost",
		"## a. Throughput and latency", "| side | clients | answered |", "Ratios of lionbus to each floor",
		"| same-messages floor | 1 |", "## Messages the server handles per request", "`publish lion.history.* (awaiting a reply)`",
		"## b. History length", "| exchanges | branch |",
		"## c. Hot branch", "| history order compared with |", "LION_OPS stream sequence",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}

	// The same client count twice is measured twice, on new branches.
	if len(rep.Throughput) != 2 {
		t.Fatalf("throughput rows = %d, want 2", len(rep.Throughput))
	}
	for _, row := range rep.Throughput {
		for _, s := range []sideRun{row.floor, row.same, row.lion} {
			if s.load.ok() == 0 || s.load.errs != 0 {
				t.Errorf("%s, %d clients: %d answered, %d errors (%v)", s.side, s.clients, s.load.ok(), s.load.errs, s.load.firstErr)
			}
		}
		if l := row.lion; l.modelCalls != int64(l.requests()) || l.redelivered != 0 {
			t.Errorf("lionbus, %d clients: %d model calls and %d redelivered runs for %d requests", l.clients, l.modelCalls, l.redelivered, l.requests())
		}
	}

	// Each side's counted requests store their messages: the
	// same-messages floor and lionbus one history append and four
	// events per request.
	if len(rep.Ops) != 3 {
		t.Fatalf("message counts = %d sides, want 3", len(rep.Ops))
	}
	for _, c := range rep.Ops {
		if c.errs != 0 || c.requests != opsClients*opsPerClient {
			t.Errorf("%s: %d requests counted, %d errors", c.side, c.requests, c.errs)
		}
	}
	for side, prefix := range map[int]string{1: "same", 2: "lion"} {
		c := rep.Ops[side]
		if h, ev := c.per("publish "+prefix+".history.* (awaiting a reply)"), c.per("publish "+prefix+".events.* (awaiting a reply)"); h != 1 || ev != 4 {
			t.Errorf("%s: %.2f history appends and %.2f events per request, want 1 and 4", c.side, h, ev)
		}
	}

	if len(rep.History) != 2 {
		t.Fatalf("history rows = %d, want 2", len(rep.History))
	}
	for _, r := range rep.History {
		if r.errs != 0 || r.lat.n != cfg.Samples || r.end != r.length+cfg.Samples {
			t.Errorf("history at %d: %d answered, %d errors (%v), ended at %d", r.length, r.lat.n, r.errs, r.first, r.end)
		}
		if r.modelCalls != int64(cfg.Samples) || r.redelivered != 0 {
			t.Errorf("history at %d: %d model calls and %d redelivered runs for %d requests", r.length, r.modelCalls, r.redelivered, cfg.Samples)
		}
	}
	// The samples at 2 run the first branch to 5, past 4: the second row
	// starts a new branch.
	if got := rep.History[1].branch; got == rep.History[0].branch {
		t.Errorf("the second length was measured on %s again, past its length", got)
	}

	hot := rep.Hot
	if want := cfg.HotClients * cfg.HotRequests; hot.answered != want || hot.errs != 0 {
		t.Errorf("hot branch: %d of %d answered, %d errors (%v)", hot.answered, want, hot.errs, hot.first)
	}
	for _, q := range hot.reqs {
		if q.answers != 1 || hot.commits[q.id] != 1 || q.seq == 0 {
			t.Errorf("hot request %s: %d answers, %d history events, stream sequence %d", q.id, q.answers, hot.commits[q.id], q.seq)
		}
	}
	if len(hot.orders) != 3 || hot.orders[0].n != len(hot.reqs) {
		t.Errorf("hot branch order checks = %+v", hot.orders)
	}
	if t.Failed() {
		t.Logf("report:\n%s", report)
	}
}

// TestRun_same_bytes runs the throughput phase with -same-bytes: the
// probe finds every payload of a communicate, and the same-messages floor,
// storing payloads of those sizes, answers every request with the reply
// its client expects (floorClient.do compares it byte for byte).
func TestRun_same_bytes(t *testing.T) {
	_, rep, report := runWith(t, "-quick", "-same-bytes", "-phases", "a", "-clients", "2", "-duration", "200ms", "-warmup", "50ms")
	if !strings.Contains(report, "Its payloads are sized as lionbus's (-same-bytes)") {
		t.Errorf("report does not say the floor's payloads are sized:\n%s", report)
	}
	for _, row := range rep.Throughput {
		if s := row.same; s.load.ok() == 0 || s.load.errs != 0 {
			t.Errorf("same-messages floor: %d answered, %d errors (%v)", s.load.ok(), s.load.errs, s.load.firstErr)
		}
	}
	// The floor's history and events carry about the bytes lionbus's do.
	same, lion := rep.Ops[1], rep.Ops[2]
	for _, class := range []string{"history", "events"} {
		s, l := same.bytesPer("publish same."+class+".* (awaiting a reply)"), lion.bytesPer("publish lion."+class+".* (awaiting a reply)")
		if s < 0.8*l || s > 1.2*l {
			t.Errorf("%s: same-messages floor %.0f B per request, lionbus %.0f B", class, s, l)
		}
	}
}

// runWith runs the harness with the command-line args and returns its
// config, report and markdown; a failed run fails t.
func runWith(t *testing.T, args ...string) (Config, *Report, string) {
	t.Helper()
	cfg, err := parseFlags(args, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, progress bytes.Buffer
	rep, err := run(ctx, cfg, &out, &progress)
	if err != nil {
		t.Fatalf("run: %v\nprogress:\n%s", err, progress.String())
	}
	return cfg, rep, out.String()
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-quick", "-samples", "7"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	q := quickConfig()
	if cfg.Samples != 7 || cfg.Duration != q.Duration || len(cfg.Lengths) != len(q.Lengths) {
		t.Errorf("-quick -samples 7 = %+v", cfg)
	}
	for _, args := range [][]string{
		{"-clients", "0"},
		{"-lengths", "10,5"},
		{"-lengths", "x"},
		{"-concurrency", "-1"},
		{"extra"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}
