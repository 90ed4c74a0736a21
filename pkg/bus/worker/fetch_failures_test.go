package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/internal/retry"
)

// A run of failed fetches is logged at its first failure, then at most
// once per FetchLogInterval with the count of failures not logged; a
// success after a logged failure says how many there were, and restarts
// the pauses at FetchRetryFirst.
func TestFetchFailures_log_at_most_once_per_interval(t *testing.T) {
	t.Parallel()
	type line struct {
		Level      string
		Message    string
		Failures   int
		Suppressed int
	}
	warn := func(failures, suppressed int) line {
		return line{"warn", "fetch requests", failures, suppressed}
	}
	again := func(failures, suppressed int) line {
		return line{"info", "fetching requests again", failures, suppressed}
	}
	const ok = -1 // a successful fetch among the failure times
	tests := []struct {
		name string
		// at lists the times of the fetches, in seconds, that fail, or ok.
		at   []float64
		want []line
	}{
		{"one failure", []float64{0, ok}, []line{warn(1, 0), again(1, 0)}},
		{"a failure a second for 25s", seq(0, 25, 1), []line{warn(1, 0), warn(11, 9), warn(21, 9)}},
		{"a failure every 100ms for 3s", seq(0, 3, 0.1), []line{warn(1, 0)}},
		{"the end of a run counts the failures not logged", append(seq(0, 3, 0.5), ok), []line{warn(1, 0), again(6, 5)}},
		{
			"a new run within the interval is counted, not logged",
			[]float64{0, ok, 2, ok, 4, 12, ok},
			[]line{warn(1, 0), again(1, 0), warn(2, 2), again(2, 0)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			f := fetchFailures{
				backoff: retry.Backoff{First: FetchRetryFirst, Max: FetchRetryMax},
				log:     zerolog.New(&buf),
			}
			t0 := time.Now()
			err := errors.New("nats: no responders available for request")
			for _, at := range tt.at {
				if at == ok {
					f.succeeded()
					if n := f.backoff.Failures(); n != 0 {
						t.Fatalf("the pauses did not start over after a success: %d failures counted", n)
					}
					continue
				}
				if d := f.failed(); d > FetchRetryMax {
					t.Fatalf("pause %s beyond FetchRetryMax", d)
				}
				f.warn(t0.Add(time.Duration(at * float64(time.Second)))).Err(err).Msg("fetch requests")
			}
			var got []line
			dec := json.NewDecoder(&buf)
			for dec.More() {
				var l line
				if err := dec.Decode(&l); err != nil {
					t.Fatal(err)
				}
				got = append(got, l)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("logged %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("line %d: %+v, want %+v", i+1, got[i], tt.want[i])
				}
			}
		})
	}
}

// seq returns from, from+step, ... up to to (excluded), in seconds.
func seq(from, to, step float64) []float64 {
	var s []float64
	for i := 0; from+float64(i)*step < to-1e-9; i++ {
		s = append(s, from+float64(i)*step)
	}
	return s
}
