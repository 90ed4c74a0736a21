package retry

import (
	"testing"
	"time"
)

func TestBackoff_Next(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		first, max time.Duration
		// want holds the delay before jitter of each failure in turn: the
		// delay returned must lie in [want/2, want].
		want []time.Duration
	}{
		{"doubles up to the cap", 100 * time.Millisecond, time.Second,
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}},
		{"cap not a power of two of first", 250 * time.Millisecond, 600 * time.Millisecond,
			[]time.Duration{250 * time.Millisecond, 500 * time.Millisecond, 600 * time.Millisecond, 600 * time.Millisecond}},
		{"first above the cap", 2 * time.Second, time.Second,
			[]time.Duration{time.Second, time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for range 50 { // the jitter is random: look at many runs
				b := Backoff{First: tt.first, Max: tt.max}
				for i, want := range tt.want {
					if got := b.Next(); got < want/2 || got > want {
						t.Fatalf("failure %d: delay %s, want within [%s, %s]", i+1, got, want/2, want)
					}
					if b.Failures() != i+1 {
						t.Fatalf("Failures() = %d after %d failures", b.Failures(), i+1)
					}
				}
				b.Reset()
				if got := b.Next(); got < tt.want[0]/2 || got > tt.want[0] {
					t.Fatalf("after Reset: delay %s, want within [%s, %s]", got, tt.want[0]/2, tt.want[0])
				}
			}
		})
	}
}

func TestBackoff_jitter_spreads_delays(t *testing.T) {
	t.Parallel()
	seen := map[time.Duration]bool{}
	for range 100 {
		b := Backoff{First: time.Second, Max: time.Second}
		seen[b.Next()] = true
	}
	if len(seen) < 10 {
		t.Fatalf("100 first delays took only %d values: no jitter", len(seen))
	}
}
