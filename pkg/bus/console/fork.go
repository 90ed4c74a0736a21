package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// fork answers "fork from here" on a branch page: it forks branch {id}
// at the form's at_seq (the event's sequence; the fork holds the history
// up to and including it) into the form's fork_id, or an id derived from
// the request's when empty, and goes to the fork's page. A fork that
// fails goes back to the branch, saying why.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !protocol.ValidToken(id) {
		s.fail(w, http.StatusBadRequest, errors.New("not a branch id: "+strconv.Quote(id)))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	seq, err := strconv.ParseUint(r.PostFormValue("at_seq"), 10, 64)
	if err != nil || seq == 0 {
		s.fail(w, http.StatusBadRequest, errors.New("at_seq: want the sequence of one of the branch's events, got "+strconv.Quote(r.PostFormValue("at_seq"))))
		return
	}
	forkID := r.PostFormValue("fork_id")
	if forkID != "" && !protocol.ValidToken(forkID) {
		s.fail(w, http.StatusBadRequest, errors.New("fork_id: not a branch id: "+strconv.Quote(forkID)))
		return
	}
	res, err := s.cl.BranchFork(r.Context(), id, wire.BranchForkRequest{BranchID: forkID, AtSeq: seq})
	if err != nil {
		v := url.Values{"error": {"fork of " + id + " at seq " + strconv.FormatUint(seq, 10) + ": " + err.Error()}}
		http.Redirect(w, r, "/branches/"+id+"?"+v.Encode(), http.StatusSeeOther)
		return
	}
	v := url.Values{"done": {"forked from " + id + " at seq " + strconv.FormatUint(seq, 10)}}
	http.Redirect(w, r, "/branches/"+res.Value.BranchID+"?"+v.Encode(), http.StatusSeeOther)
}
