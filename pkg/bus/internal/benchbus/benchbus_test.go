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
// no repeated model call.
func TestRun_quick(t *testing.T) {
	cfg, err := parseFlags([]string{
		"-quick", "-clients", "1", "-duration", "300ms", "-warmup", "50ms",
	}, &bytes.Buffer{})
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
	report := out.String()
	for _, want := range []string{
		"# lionbus request cost",
		"## a. Throughput and latency", "| side | clients | answered |", "Ratios lionbus/floor",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}

	if len(rep.Throughput) != 1 {
		t.Fatalf("throughput rows = %d, want 1", len(rep.Throughput))
	}
	for _, row := range rep.Throughput {
		for _, s := range []sideRun{row.floor, row.lion} {
			if s.load.ok() == 0 || s.load.errs != 0 {
				t.Errorf("%s, %d clients: %d answered, %d errors (%v)", s.side, s.clients, s.load.ok(), s.load.errs, s.load.firstErr)
			}
		}
		if l := row.lion; l.modelCalls != int64(l.requests()) || l.redelivered != 0 {
			t.Errorf("lionbus, %d clients: %d model calls and %d redelivered runs for %d requests", l.clients, l.modelCalls, l.redelivered, l.requests())
		}
	}

	if t.Failed() {
		t.Logf("report:\n%s", report)
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-quick", "-warmup", "1s"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if q := quickConfig(); cfg.Warmup != time.Second || cfg.Duration != q.Duration {
		t.Errorf("-quick -warmup 1s = %+v", cfg)
	}
	for _, args := range [][]string{
		{"-clients", "0"},
		{"-clients", "x"},
		{"-concurrency", "-1"},
		{"extra"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}
