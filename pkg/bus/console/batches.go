package console

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/wire"
)

// MaxBatchResults is the most item results a batch page reads; a larger
// batch shows its first MaxBatchResults (in completion order) and says so.
const MaxBatchResults = 1000

// errEnough stops a read of batch results at MaxBatchResults.
var errEnough = errors.New("console: enough results")

// batchList is the data of the batches page.
type batchList struct {
	Title   string
	Batches []wire.Batch
}

// batchPage is the data of one batch's page.
type batchPage struct {
	Title     string
	Batch     *wire.Batch
	Final     bool
	Failures  []wire.BatchResult // the items that did not succeed
	Results   []wire.BatchResult // every item result read, completion order
	Truncated bool               // more than MaxBatchResults results
}

// percent is how much of b has finished, 0 to 100.
func percent(b *wire.Batch) int {
	if b.Total <= 0 {
		return 0
	}
	return b.Counts.Finished() * 100 / b.Total
}

// batches serves the batch list, newest first.
func (s *Server) batches(w http.ResponseWriter, r *http.Request) {
	list, err := s.cl.Batches(r.Context())
	if err != nil {
		s.fail(w, http.StatusBadGateway, err)
		return
	}
	slices.Reverse(list)
	s.render(w, "batches.html", batchList{Title: "Batches", Batches: list})
}

// batch serves one batch: its state, progress, counts per state, cost,
// failures with their codes and the items' results.
func (s *Server) batch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !wire.ValidBatchID(id) {
		s.fail(w, http.StatusBadRequest, errors.New("not a batch id: "+strconv.Quote(id)))
		return
	}
	b, err := s.cl.Batch(r.Context(), id)
	switch {
	case errors.Is(err, client.ErrNoBatch):
		s.fail(w, http.StatusNotFound, err)
		return
	case err != nil:
		s.fail(w, http.StatusBadGateway, err)
		return
	}
	d := batchPage{Title: "Batch " + id, Batch: b, Final: wire.BatchFinal(b.State)}
	err = s.cl.BatchResults(r.Context(), id, 0, false, func(res wire.BatchResult) error {
		if len(d.Results) == MaxBatchResults {
			d.Truncated = true
			return errEnough
		}
		d.Results = append(d.Results, res)
		if res.Status != wire.ItemSucceeded {
			d.Failures = append(d.Failures, res)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		s.fail(w, http.StatusBadGateway, err)
		return
	}
	s.render(w, "batch.html", d)
}

// batchProgress is what the batch page's live stream sends on each change
// of the record.
type batchProgress struct {
	State    string           `json:"state"`
	Percent  int              `json:"percent"`
	Finished int              `json:"finished"`
	Total    int              `json:"total"`
	Counts   wire.BatchCounts `json:"counts"`
	CostUSD  float64          `json:"cost_usd"`
	Final    bool             `json:"final"`
}

// batchLive streams a "progress" event with the batch's record now and
// on each change until the batch has ended.
func (s *Server) batchLive(w http.ResponseWriter, r *http.Request) {
	s.serveLive(w, r, "batch id", wire.ValidBatchID, func(ctx context.Context, id string, out *sse) error {
		return s.cl.WatchBatch(ctx, id, func(b *wire.Batch) error {
			return out.send("progress", batchProgress{
				State: b.State, Percent: percent(b), Finished: b.Counts.Finished(), Total: b.Total,
				Counts: b.Counts, CostUSD: b.Usage.CostUSD, Final: wire.BatchFinal(b.State),
			})
		})
	})
}
