package console

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// branchList is the data of the branches page.
type branchList struct {
	Title    string
	Query    string
	Total    int // branches the user may see
	Matching int // of them, those matching Query
	Branches []client.BranchInfo
	Page     int // from 1
	Prev     string
	Next     string
}

// newestFirst orders branches by their last event, newest first, then by
// id.
func newestFirst(list []client.BranchInfo) {
	slices.SortStableFunc(list, func(a, b client.BranchInfo) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// branches serves the branch list: newest first, ?q= keeps the ids that
// contain it, ?page= pages by PageSize.
func (s *Server) branches(w http.ResponseWriter, r *http.Request) {
	list, err := s.cl.Branches(r.Context())
	if err != nil {
		s.fail(w, http.StatusBadGateway, err)
		return
	}
	d := branchList{Title: "Branches", Query: strings.TrimSpace(r.URL.Query().Get("q")), Total: len(list), Page: 1}
	if d.Query != "" {
		list = slices.DeleteFunc(list, func(b client.BranchInfo) bool { return !strings.Contains(b.ID, d.Query) })
	}
	d.Matching = len(list)
	newestFirst(list)
	if p, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && p > 1 {
		d.Page = p
	}
	start := min((d.Page-1)*PageSize, len(list))
	end := min(start+PageSize, len(list))
	d.Branches = list[start:end]
	link := func(page int) string {
		v := r.URL.Query()
		v.Set("page", strconv.Itoa(page))
		return "/branches?" + v.Encode()
	}
	if d.Page > 1 {
		d.Prev = link(d.Page - 1)
	}
	if end < len(list) {
		d.Next = link(d.Page + 1)
	}
	s.render(w, "branches.html", d)
}

// branchPage is the data of a branch's page.
type branchPage struct {
	Title     string
	Branch    wire.Branch
	Timeline  []entry
	Truncated bool // the history is longer than MaxTimelineEvents
	Forks     []wire.Fork
	Ancestry  []wire.ForkPoint
	Usage     wire.Usage // summed over the timeline's operations
	Notice    string     // what the last fork did
	Error     string     // why it failed
}

// branch serves one branch: its settings, lineage and history timeline.
func (s *Server) branch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !protocol.ValidToken(id) {
		s.fail(w, http.StatusBadRequest, errors.New("not a branch id: "+strconv.Quote(id)))
		return
	}
	ctx := r.Context()
	got, err := s.cl.BranchGet(ctx, id)
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, wire.ErrBranchNotFound) {
			status = http.StatusNotFound
		}
		s.fail(w, status, err)
		return
	}
	d := branchPage{Title: "Branch " + id, Branch: got.Value, Notice: r.URL.Query().Get("done"), Error: r.URL.Query().Get("error")}
	var events []wire.Event
	after := uint64(0)
	for {
		page, err := s.cl.BranchHistory(ctx, id, wire.BranchHistoryRequest{After: after, Limit: 1000})
		if err != nil {
			s.fail(w, http.StatusBadGateway, err)
			return
		}
		events = append(events, page.Value.Events...)
		if !page.Value.More || len(page.Value.Events) == 0 {
			break
		}
		if len(events) >= MaxTimelineEvents {
			d.Truncated = true
			break
		}
		after = page.Value.Next
	}
	if len(events) > MaxTimelineEvents {
		events, d.Truncated = events[:MaxTimelineEvents], true
	}
	d.Timeline, d.Usage = timeline(events)
	// Lineage is shown when it can be read; a branch page does not fail
	// for it.
	if forks, err := s.cl.AllForks(ctx, id); err == nil {
		d.Forks = forks
	}
	if got.Value.Fork != nil {
		if anc, err := s.cl.BranchAncestry(ctx, id); err == nil {
			d.Ancestry = anc
		}
	}
	s.render(w, "branch.html", d)
}
