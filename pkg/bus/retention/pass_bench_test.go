package retention_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/retention"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// BenchmarkCompactor_pass: a pass over a history of 200 branches of 10
// events each, nothing due: the first pass of a compactor (it reads
// every header) against a later one with 10 events written since.
func BenchmarkCompactor_pass(b *testing.B) {
	bus := bustest.New(b, provision.Config{})
	_, js, res := bus.Conn(b)
	st, err := store.New(js, res, store.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := bustest.Ctx(b)
	at := time.Now().UTC()
	for i := range 200 {
		id := "b" + strconv.Itoa(i)
		if _, err := st.Create(ctx, id, history.Event{Type: history.EventCreated, RequestID: id, Time: at}); err != nil {
			b.Fatal(err)
		}
		for j := range 9 {
			if _, err := st.Append(ctx, id, history.Event{Type: history.EventUpdated, RequestID: id + "/" + strconv.Itoa(j), Time: at,
				Settings: &history.Settings{Notes: map[string]any{"j": j}}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	cfg := retention.LiveConfig{KeepEvents: 1000, Logger: bustest.Logger(b)}
	newC := func() *retention.Compactor {
		c, err := retention.NewCompactor(js, res, st, cfg)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	b.Run("first", func(b *testing.B) {
		var c *retention.Compactor
		for b.Loop() {
			c = newC()
			if _, err := c.Pass(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(c.HeadersRead()), "headers/pass")
	})
	b.Run("later", func(b *testing.B) {
		c := newC()
		if _, err := c.Pass(ctx); err != nil {
			b.Fatal(err)
		}
		n := 0
		for b.Loop() {
			b.StopTimer()
			for range 10 {
				n++
				if _, err := st.Append(ctx, "b0", history.Event{Type: history.EventUpdated, RequestID: "later/" + strconv.Itoa(n), Time: at,
					Settings: &history.Settings{Notes: map[string]any{"n": n}}}); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			if _, err := c.Pass(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(c.HeadersRead()), "headers/pass")
	})
}
