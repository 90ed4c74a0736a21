package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// ErrTooManyLive is why a server-sent event stream beyond MaxLiveClients
// is refused.
var ErrTooManyLive = fmt.Errorf("console: more than %d live streams", MaxLiveClients)

// sse is one open server-sent event stream.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

// openSSE starts a server-sent event stream on w, or answers why not and
// returns nil. done must be called when the stream ends.
func (s *Server) openSSE(w http.ResponseWriter) (_ *sse, done func()) {
	f, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "console: streaming unsupported", http.StatusInternalServerError)
		return nil, nil
	}
	if s.live.Add(1) > MaxLiveClients {
		s.live.Add(-1)
		http.Error(w, ErrTooManyLive.Error(), http.StatusServiceUnavailable)
		return nil, nil
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return &sse{w: w, f: f}, func() { s.live.Add(-1) }
}

// send writes one event named name with v as its JSON data.
func (e *sse) send(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}

// serveLive serves the server-sent event stream of r's {id}, what it is
// named in the error when valid refuses it: watch sends the events on out
// until it returns, and an error it returns while the page is still open
// is sent as a "failed" event with why.
func (s *Server) serveLive(w http.ResponseWriter, r *http.Request, what string, valid func(string) bool, watch func(ctx context.Context, id string, out *sse) error) {
	id := r.PathValue("id")
	if !valid(id) {
		http.Error(w, "console: not a "+what, http.StatusBadRequest)
		return
	}
	out, done := s.openSSE(w)
	if out == nil {
		return
	}
	defer done()
	if err := watch(r.Context(), id, out); err != nil && r.Context().Err() == nil {
		_ = out.send("failed", map[string]string{"error": err.Error()})
	}
}

// branchLive streams a "change" event for each signal event of the
// branch (a message added, a run started or ended), from now on; the
// branch page reloads its timeline on each.
func (s *Server) branchLive(w http.ResponseWriter, r *http.Request) {
	s.serveLive(w, r, "branch id", protocol.ValidToken, func(ctx context.Context, id string, out *sse) error {
		return s.cl.Watch(ctx, id, client.WatchOptions{}, func(ev *event.Event) error {
			return out.send("change", map[string]string{"type": ev.Type()})
		})
	})
}

// runPage is the data of a run's page.
type runPage struct {
	Title string
	ID    string
}

// run serves a request's live page: its chunks stream into it.
func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !protocol.ValidToken(id) {
		s.fail(w, http.StatusBadRequest, errors.New("not a request id: "+strconv.Quote(id)))
		return
	}
	s.render(w, "run.html", runPage{Title: "Run " + id, ID: id})
}

// runLive streams the chunks of a request as "chunk" events, from the
// first one the chunks stream keeps, then "end" with its answer's type
// once it is answered (or "failed" with why it could not be followed).
func (s *Server) runLive(w http.ResponseWriter, r *http.Request) {
	s.serveLive(w, r, "request id", protocol.ValidToken, func(ctx context.Context, id string, out *sse) error {
		reply, err := s.cl.Follow(ctx, id, 0, func(c wire.Chunk) error { return out.send("chunk", c) })
		if err == nil && reply != nil {
			err = out.send("end", map[string]string{"type": reply.Type})
		}
		return err
	})
}
