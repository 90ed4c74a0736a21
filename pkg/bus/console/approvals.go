package console

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Bounds of the approvals page (docs/bounds.md).
const (
	// MaxApprovals is the most approvals the approvals page lists: the
	// newest of them, newest first.
	MaxApprovals = 200
	// MaxReasonBytes is the longest reason an answer given from the
	// page may carry; a longer one is refused.
	MaxReasonBytes = 1024
	// AnswerWait is how long an answer given from the page waits for a
	// worker to say what became of it.
	AnswerWait = 5 * time.Second
	// ApprovalsRefresh is how often, in seconds, the approvals page
	// fetches its list again (?refresh=N sets it, 1 to MaxRefresh); a
	// refresh waits while a reason is being typed.
	ApprovalsRefresh = 3
)

// approvalList is the data of the approvals page.
type approvalList struct {
	Title     string
	Approvals []approvalRow // newest first
	Total     int           // approvals read, of which Approvals are the newest
	All       bool          // decided ones listed too
	Off       bool          // there is no approvals bucket
	Approver  string        // the user answers are given as; "" gives none
	Refresh   int           // seconds between the page's refreshes
	Notice    string        // what the last answer did
	Error     string        // why it failed
}

// approvalRow is one approval with its arguments as text.
type approvalRow struct {
	wire.Approval
	Args string // the arguments, JSON
}

// approvals serves the approvals: the pending ones (all with ?all=1),
// newest first, with approve and deny.
func (s *Server) approvals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	all := q.Get("all") == "1"
	list, err := s.cl.Approvals(r.Context(), !all)
	off := errors.Is(err, jetstream.ErrBucketNotFound) // no worker parks approvals
	if err != nil && !off {
		s.fail(w, http.StatusBadGateway, err)
		return
	}
	slices.SortFunc(list, func(a, b wire.Approval) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	d := approvalList{Refresh: refreshSeconds(r, ApprovalsRefresh), Title: "Approvals", Total: len(list), All: all, Off: off, Approver: s.approver, Notice: q.Get("done"), Error: q.Get("error")}
	for _, a := range list[:min(len(list), MaxApprovals)] {
		args, _ := json.Marshal(a.Arguments)
		d.Approvals = append(d.Approvals, approvalRow{Approval: a, Args: string(args)})
	}
	s.render(w, "approvals.html", d)
}

// answer answers approval {id} as the console's approver, approving or
// denying it with the form's reason: back to the list, saying what
// happened.
func (s *Server) answer(approve bool) http.HandlerFunc {
	verb := map[bool]string{true: "approve", false: "deny"}[approve]
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if !protocol.ValidToken(id) {
			s.fail(w, http.StatusBadRequest, errors.New("not an approval id: "+strconv.Quote(id)))
			return
		}
		if s.approver == "" {
			s.fail(w, http.StatusForbidden, errors.New("this console answers no approvals: start it with --as USER (or --user)"))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 4*MaxReasonBytes)
		reason := r.PostFormValue("reason")
		if len(reason) > MaxReasonBytes {
			s.fail(w, http.StatusRequestEntityTooLarge, errors.New("the reason is longer than "+strconv.Itoa(MaxReasonBytes)+" bytes"))
			return
		}
		v := url.Values{}
		_, err := s.cl.AnswerApproval(r.Context(), id, client.Answer{Approve: approve, Reason: reason, User: s.approver, Wait: AnswerWait})
		var refused *wire.ApprovalRefusedError
		switch {
		case err == nil:
			v.Set("done", map[bool]string{true: "approved ", false: "denied "}[approve]+id+" as "+s.approver+"; its request resumes")
		case errors.As(err, &refused):
			v.Set("error", verb+" "+id+" refused: "+string(refused.Code)+": "+refused.Message)
		case errors.Is(err, client.ErrAnswerQueued):
			v.Set("done", "the answer to "+id+" is stored; a worker applies it when one runs")
		default:
			v.Set("error", verb+" "+id+": "+err.Error())
		}
		http.Redirect(w, r, "/approvals?"+v.Encode(), http.StatusSeeOther)
	}
}
