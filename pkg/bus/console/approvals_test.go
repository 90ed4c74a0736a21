package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/console"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/tools"
	"github.com/lionbus/lionbus/pkg/wire"
)

// parked starts a server with the approvals of pkg/tools reading answers
// (as a parking worker runs them), parks a call of refund and then one of
// transfer, and serves a console with opts; it returns the fixture and
// the approvals' ids, oldest first.
func parked(t *testing.T, opts ...console.Option) (*fixture, []string) {
	t.Helper()
	f, ids, _ := parkedWith(t, opts...)
	return f, ids
}

// parkedWith is parked, with the approvals gate that parked the calls, to
// park more.
func parkedWith(t *testing.T, opts ...console.Option) (*fixture, []string, *tools.Approvals) {
	t.Helper()
	b := bustest.New(t, provision.Config{})
	ctx := bustest.Ctx(t)
	approvals, err := tools.OpenApprovals(ctx, b.NC, b.JS, tools.ApprovalsConfig{Prefix: b.Cfg.Prefix, Sweep: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = approvals.Serve(serveCtx) }()
	t.Cleanup(func() { stop(); <-done })
	var ids []string
	for i, call := range []wire.ToolInvocation{
		{Function: "refund", Arguments: map[string]any{"amount": 10}, RequestID: "req-refund", BranchID: "shop"},
		{Function: "transfer", Arguments: map[string]any{"to": "acct-9", "amount": 5000}, RequestID: "req-transfer", BranchID: "shop"},
	} {
		call.IdempotencyKey = wire.ToolCallKey(call.RequestID, i)
		_, err := approvals.Authorize(ctx, call)
		var p *ops.ParkedError
		if !errors.As(err, &p) {
			t.Fatalf("authorize %s: %v, want it parked", call.Function, err)
		}
		ids = append(ids, p.ApprovalID)
		time.Sleep(5 * time.Millisecond) // distinct creation times, for the order
	}
	cl, u := serveConsole(t, b, opts...)
	return &fixture{b: b, url: u, cl: cl}, ids, approvals
}

// park parks one more call of function on branch shop through approvals
// and returns its approval id.
func park(t *testing.T, approvals *tools.Approvals, function, requestID string) string {
	t.Helper()
	call := wire.ToolInvocation{Function: function, Arguments: map[string]any{"n": 1}, RequestID: requestID, BranchID: "shop",
		IdempotencyKey: wire.ToolCallKey(requestID, 0)}
	_, err := approvals.Authorize(bustest.Ctx(t), call)
	var p *ops.ParkedError
	if !errors.As(err, &p) {
		t.Fatalf("authorize %s: %v, want it parked", function, err)
	}
	return p.ApprovalID
}

// The approvals page lists the pending approvals newest first with their
// tool, arguments and branch; answers from it are given as the console's
// approver and recorded; a second answer is refused with its code; a
// console without an approver lists but does not answer.
func TestPages_approvals(t *testing.T) {
	t.Parallel()
	f, ids := parked(t, console.WithApprover("alice"))
	status, body := f.get(t, "/approvals")
	if status != http.StatusOK {
		t.Fatalf("approvals: %d %s", status, body)
	}
	if miss, ok := ordered(body, "2 pending approvals", "Answer as alice", `data-id="`+ids[1]+`"`, "transfer", `{&#34;amount&#34;:5000,&#34;to&#34;:&#34;acct-9&#34;}`,
		`href="/branches/shop"`, `data-id="`+ids[0]+`"`, "refund", `action="/approvals/`+ids[0]+`/deny"`); !ok {
		t.Fatalf("the approvals page lacks %q (or has it out of order):\n%s", miss, body)
	}

	for _, c := range []struct {
		name   string
		path   string
		form   url.Values
		header map[string]string
		status int
		query  string // in the redirect's done or error
	}{
		{name: "from another site", path: "/approvals/" + ids[0] + "/approve", header: map[string]string{"Sec-Fetch-Site": "cross-site"}, status: http.StatusForbidden},
		{name: "not an id", path: "/approvals/a.b/approve", status: http.StatusBadRequest},
		{name: "reason too long", path: "/approvals/" + ids[1] + "/deny", form: url.Values{"reason": {strings.Repeat("x", console.MaxReasonBytes+1)}}, status: http.StatusRequestEntityTooLarge},
		{name: "approve", path: "/approvals/" + ids[0] + "/approve", status: http.StatusSeeOther, query: "approved " + ids[0] + " as alice"},
		{name: "approve again", path: "/approvals/" + ids[0] + "/approve", status: http.StatusSeeOther, query: string(wire.CodeApprovalAnswered)},
		{name: "deny", path: "/approvals/" + ids[1] + "/deny", form: url.Values{"reason": {"too much"}}, status: http.StatusSeeOther, query: "denied " + ids[1]},
		{name: "unknown", path: "/approvals/nope/deny", status: http.StatusSeeOther, query: "no such approval"},
	} {
		status, loc := f.post(t, c.path, c.form, c.header)
		var q url.Values
		if loc != nil {
			q = loc.Query()
		}
		if status != c.status {
			t.Fatalf("%s: status %d, want %d", c.name, status, c.status)
		}
		if c.query != "" && !strings.Contains(q.Get("done")+q.Get("error"), c.query) {
			t.Fatalf("%s: redirected with %v, want %q", c.name, q, c.query)
		}
	}

	for id, want := range map[string]struct {
		allow  bool
		reason string
	}{ids[0]: {allow: true}, ids[1]: {reason: "too much"}} {
		a, err := f.cl.Approval(bustest.Ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if a.Decision == nil || a.Decision.Allow != want.allow || a.Decision.By.User != "alice" || a.Decision.Reason != want.reason {
			t.Fatalf("approval %s decided %+v, want allow %v by alice, reason %q", id, a.Decision, want.allow, want.reason)
		}
	}
	_, body = f.get(t, "/approvals")
	if !strings.Contains(body, "No pending approvals.") {
		t.Fatalf("decided approvals still listed as pending:\n%s", body)
	}
	_, body = f.get(t, "/approvals?all=1")
	if miss, ok := ordered(body, "2 approvals", "denied by alice: too much", "approved by alice"); !ok {
		t.Fatalf("the list of all lacks %q:\n%s", miss, body)
	}

	// Without an approver: listed, not answered.
	g, ids := parked(t)
	_, body = g.get(t, "/approvals")
	if !strings.Contains(body, `id="no-approver"`) || strings.Contains(body, "/approve\"") {
		t.Fatalf("a console without an approver offers answers:\n%s", body)
	}
	if status, _ := g.post(t, "/approvals/"+ids[0]+"/approve", nil, nil); status != http.StatusForbidden {
		t.Fatalf("an answer without an approver: %d, want 403", status)
	}
}

func TestBrowser_approval_approved_and_denied(t *testing.T) {
	f, ids := parked(t, console.WithApprover("alice"))
	ctx := browser(t)
	row := func(id string) string { return `tr.approval-row[data-id="` + id + `"]` }
	do(t, ctx, chromedp.Navigate(f.url+"/approvals"), until(`document.querySelector('`+row(ids[1])+`') !== null`))
	screenshot(t, ctx, "approvals")

	do(t, ctx, chromedp.Click(row(ids[0])+` button.approve`))
	arrived(t, ctx, `document.getElementById("notice") !== null && document.querySelectorAll("tr.approval-row").length === 1`)
	if got := eval[string](t, ctx, `document.getElementById("notice").textContent`); !strings.Contains(got, "approved "+ids[0]) {
		t.Fatalf("after approve the page says %q", got)
	}

	do(t, ctx, chromedp.SendKeys(row(ids[1])+` input[name=reason]`, "over the limit"), chromedp.Click(row(ids[1])+` button.deny`))
	arrived(t, ctx, `document.querySelectorAll("tr.approval-row").length === 0`)
	a, err := f.cl.Approval(bustest.Ctx(t), ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if a.State != wire.ApprovalDenied || a.Decision.Reason != "over the limit" || a.Decision.By.User != "alice" {
		t.Fatalf("the denied approval is %s %+v", a.State, a.Decision)
	}
}

// The approvals page keeps itself current without a reload: a call parked
// while it is open appears, one answered elsewhere goes, and no refresh
// throws away a reason being typed.
func TestBrowser_approvals_update_in_place(t *testing.T) {
	f, ids, approvals := parkedWith(t, console.WithApprover("alice"))
	ctx := browser(t)
	row := func(id string) string { return `document.querySelector('tr.approval-row[data-id="` + id + `"]')` }
	do(t, ctx, chromedp.Navigate(f.url+"/approvals?refresh=1"), until(row(ids[1])+` !== null`))
	marker := eval[bool](t, ctx, `(window.sameDocument = true)`)

	third := park(t, approvals, "wire_money", "req-wire")
	arrived(t, ctx, row(third)+` !== null && document.querySelectorAll("tr.approval-row").length === 3`)
	if _, err := f.cl.AnswerApproval(bustest.Ctx(t), ids[0], client.Answer{Approve: true, User: "bob"}); err != nil {
		t.Fatal(err)
	}
	arrived(t, ctx, row(ids[0])+` === null && document.querySelectorAll("tr.approval-row").length === 2`)

	// A reason being typed holds the refreshes back: the fourth approval
	// is not shown (two refresh periods pass), and the text stays.
	do(t, ctx, chromedp.SendKeys(`tr.approval-row[data-id="`+ids[1]+`"] input[name=reason]`, "checking"))
	fourth := park(t, approvals, "close_account", "req-close")
	time.Sleep(2500 * time.Millisecond)
	if eval[bool](t, ctx, row(fourth)+` !== null`) {
		t.Fatal("the list was refreshed while a reason was being typed")
	}
	if got := eval[string](t, ctx, row(ids[1])+`.querySelector("input[name=reason]").value`); got != "checking" {
		t.Fatalf("the reason being typed is %q, want checking", got)
	}
	// Cleared and left, the list refreshes again.
	if !eval[bool](t, ctx, `(() => { const i = `+row(ids[1])+`.querySelector("input[name=reason]"); i.value = ""; i.blur(); return document.activeElement !== i; })()`) {
		t.Fatal("the reason input kept the focus")
	}
	arrived(t, ctx, row(fourth)+` !== null`)
	if !marker || !eval[bool](t, ctx, `window.sameDocument === true`) {
		t.Fatal("the page was reloaded, not updated in place")
	}
}

// Before any worker parked a call there is no approvals bucket: the page
// says so instead of failing.
func TestPages_approvals_without_a_bucket(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	_, u := serveConsole(t, b)
	f := &fixture{b: b, url: u}
	status, body := f.get(t, "/approvals")
	if status != http.StatusOK || !strings.Contains(body, `id="off"`) || !strings.Contains(body, "No pending approvals.") {
		t.Fatalf("approvals without a bucket: %d\n%s", status, body)
	}
}
