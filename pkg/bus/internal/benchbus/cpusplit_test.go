package main

import (
	"bytes"
	"context"
	"runtime/pprof"
	"testing"
	"time"
)

// TestProfileShares checks that the profile reader finds the samples of
// a busy client loop in a CPU profile of this process.
func TestProfileShares(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skipf("CPU profile: %v", err)
	}
	l := closedLoop(t.Context(), 1, 300*time.Millisecond, time.Second, func(ctxDone context.Context, _ int) error {
		x := 0
		for i := range 200000 {
			x += i * i
		}
		if x == 0 {
			t.Log(x)
		}
		return nil
	})
	pprof.StopCPUProfile()
	if l.ok() == 0 {
		t.Fatal("the loop ran no request")
	}
	s, err := profileShares(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if s.samples == 0 || s.client < 0.5 || s.server != 0 {
		t.Errorf("shares = %+v, want most samples the client's and none the server's", s)
	}
	if _, err := profileShares(bytes.NewReader([]byte("not a profile"))); err == nil {
		t.Error("a malformed profile was read")
	}
}
