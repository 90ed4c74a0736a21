package console_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/wire"
)

// seqs returns the sequences of branch id's history events, oldest first.
func (f *fixture) seqs(t *testing.T, id string) []uint64 {
	t.Helper()
	h, err := f.cl.BranchHistory(bustest.Ctx(t), id, wire.BranchHistoryRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, e := range h.Value.Events {
		out = append(out, e.Seq)
	}
	return out
}

// "Fork from here" forks the branch at the event's sequence into the id
// given (or one derived) and goes to the fork's page; bad forms are
// refused with what is wrong, a fork that fails goes back saying why,
// and a post from another site is refused.
func TestPages_fork_from_here(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.communicated(t, "talk", "Say hi to Lyon", "Bonjour Lyon")
	seqs := f.seqs(t, "talk")
	if len(seqs) != 2 {
		t.Fatalf("talk has events %v, want created and messages", seqs)
	}
	_, body := f.get(t, "/branches/talk")
	if strings.Count(body, `class="fork-here"`) != 2 || !strings.Contains(body, `name="at_seq" value="`+strconv.FormatUint(seqs[0], 10)+`"`) {
		t.Fatalf("the branch page has no fork button per event:\n%s", body)
	}
	at := func(seq uint64) url.Values { return url.Values{"at_seq": {strconv.FormatUint(seq, 10)}} }
	for _, c := range []struct {
		name     string
		form     url.Values
		header   map[string]string
		status   int
		location string // path of the redirect
		query    string // in its done or error
	}{
		{name: "from another site", form: at(seqs[0]), header: map[string]string{"Sec-Fetch-Site": "cross-site"}, status: http.StatusForbidden},
		{name: "no seq", status: http.StatusBadRequest},
		{name: "bad fork id", form: url.Values{"at_seq": {"1"}, "fork_id": {"a.b"}}, status: http.StatusBadRequest},
		{name: "before the instruction", form: url.Values{"at_seq": {strconv.FormatUint(seqs[0], 10)}, "fork_id": {"talk-early"}},
			status: http.StatusSeeOther, location: "/branches/talk-early", query: "forked from talk at seq " + strconv.FormatUint(seqs[0], 10)},
		{name: "the same id again", form: url.Values{"at_seq": {strconv.FormatUint(seqs[1], 10)}, "fork_id": {"talk-early"}},
			status: http.StatusSeeOther, location: "/branches/talk", query: "fork of talk at seq"},
		{name: "a derived id", form: at(seqs[1]), status: http.StatusSeeOther, query: "forked from talk"},
	} {
		status, to := f.post(t, "/branches/talk/fork", c.form, c.header)
		var q url.Values
		var loc string
		if to != nil {
			q, loc = to.Query(), to.Path
		}
		if status != c.status {
			t.Fatalf("%s: status %d, want %d", c.name, status, c.status)
		}
		if c.location != "" && loc != c.location {
			t.Fatalf("%s: redirected to %s, want %s", c.name, loc, c.location)
		}
		if c.query != "" && !strings.Contains(q.Get("done")+q.Get("error"), c.query) {
			t.Fatalf("%s: redirected with %v, want %q", c.name, q, c.query)
		}
	}
	early, err := f.cl.BranchGet(bustest.Ctx(t), "talk-early")
	if err != nil {
		t.Fatal(err)
	}
	if early.Value.Fork == nil || early.Value.Fork.BranchID != "talk" || early.Value.Fork.Seq != seqs[0] || len(early.Value.Messages) != 1 {
		t.Fatalf("the fork is %+v with %d messages, want talk at %d with its system message only", early.Value.Fork, len(early.Value.Messages), seqs[0])
	}
	_, body = f.get(t, "/branches/talk-early?done=forked")
	if miss, ok := ordered(body, `id="notice"`, "forked", "Fork of:", `href="/branches/talk"`); !ok {
		t.Fatalf("the fork's page lacks %q:\n%s", miss, body)
	}
}

func TestBrowser_fork_from_here(t *testing.T) {
	f := newFixture(t)
	f.operated(t, "work")
	seqs := f.seqs(t, "work")
	ctx := browser(t)
	last := strconv.FormatUint(seqs[len(seqs)-1], 10)
	do(t, ctx, chromedp.Navigate(f.url+"/branches/work"), chromedp.WaitVisible(chromedp.CSS(`#timeline`)),
		chromedp.Click(`#seq-`+last+` form.fork-here button`))
	arrived(t, ctx, `document.querySelector("a.parent") !== null && document.getElementById("notice") !== null`)
	path := eval[string](t, ctx, `location.pathname`)
	forkID, ok := strings.CutPrefix(path, "/branches/")
	if !ok || forkID == "work" {
		t.Fatalf("after the fork the browser is at %s", path)
	}
	work, err := f.cl.BranchGet(bustest.Ctx(t), "work")
	if err != nil {
		t.Fatal(err)
	}
	if n := eval[string](t, ctx, `document.getElementById("message-count").textContent`); n != strconv.Itoa(len(work.Value.Messages)) {
		t.Fatalf("the fork's page counts %s messages, want the %d of work", n, len(work.Value.Messages))
	}
	got, err := f.cl.BranchGet(bustest.Ctx(t), forkID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Value.Fork == nil || got.Value.Fork.BranchID != "work" || strconv.FormatUint(got.Value.Fork.Seq, 10) != last {
		t.Fatalf("the fork %s is %+v, want work at %s", forkID, got.Value.Fork, last)
	}
	screenshot(t, ctx, "branch-forked")
}
