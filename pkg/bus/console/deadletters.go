package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// MaxDeadLetters is the most dead letters the dead-letter page lists:
// the newest of them, newest first.
const MaxDeadLetters = 200

// deadLetterList is the data of the dead-letter page.
type deadLetterList struct {
	Title   string
	Letters []*protocol.DeadLetter // newest first
	Total   int                    // dead letters read, of which Letters are the newest
	Notice  string                 // what the last retry or delete did
	Run     string                 // the request a retry made, for its run page
	Error   string                 // why it failed
}

// deadLetters serves the dead letters: why each failed, with retry and
// delete.
func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	// The client reads oldest first, up to its own bound: the newest are
	// at the end.
	list, err := s.cl.DeadLetters(r.Context(), 0)
	if err != nil {
		s.fail(w, http.StatusBadGateway, err)
		return
	}
	total := len(list)
	list = list[max(0, total-MaxDeadLetters):]
	slices.Reverse(list)
	q := r.URL.Query()
	d := deadLetterList{Title: "Dead letters", Letters: list, Total: total, Notice: q.Get("done"), Error: q.Get("error")}
	if run := q.Get("run"); protocol.ValidToken(run) {
		d.Run = run
	}
	s.render(w, "deadletters.html", d)
}

// deadLetterAction answers a retry or delete of dead letter {key}: back to
// the list, saying what happened; a retry links its new request.
func (s *Server) deadLetterAction(retry bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.PathValue("key")
		if !protocol.ValidToken(key) {
			s.fail(w, http.StatusBadRequest, errors.New("not a dead-letter key: "+strconv.Quote(key)))
			return
		}
		v := url.Values{}
		if retry {
			id, err := s.cl.RetryDeadLetter(r.Context(), key)
			if err != nil {
				v.Set("error", "retry of "+key+": "+err.Error())
			} else {
				v.Set("done", "retried "+key+" as request "+id)
				v.Set("run", id)
			}
		} else if err := s.cl.DeleteDeadLetter(r.Context(), key); err != nil {
			v.Set("error", "delete of "+key+": "+err.Error())
		} else {
			v.Set("done", "deleted "+key)
		}
		http.Redirect(w, r, "/dead-letters?"+v.Encode(), http.StatusSeeOther)
	}
}
