package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// deadLettered starts a server whose worker fails every request with a
// temporary error while failing is set (two deliveries, then the dead
// letter) and answers its data once it is not, dead-letters n requests
// of verb op.later and serves a console; it returns the fixture and the
// requests' ids.
func deadLettered(t *testing.T, failing *atomic.Bool, n int) (*fixture, []string) {
	t.Helper()
	b := bustest.New(t, provision.Config{MaxDeliver: 2})
	failing.Store(true)
	b.StartWorker(t, nil, worker.HandlerFunc(func(ctx context.Context, req ops.Request) (*ops.Result, error) {
		if failing.Load() {
			return nil, &ops.Error{Code: ops.CodeUnavailable, Message: "backend down", Temporary: true}
		}
		return &ops.Result{Value: req.Data}, nil
	}), nil, worker.Config{Backoff: worker.Backoff{10 * time.Millisecond}})
	var ids []string
	for i := range n {
		id, err := b.Client.Submit(bustest.Ctx(t), "op.later", "", map[string]any{"x": i})
		if err != nil {
			t.Fatal(err)
		}
		b.Await(t, id)
		bustest.WaitFor(t, 10*time.Second, "dead letter", func() bool {
			_, err := b.Client.DeadLetter(bustest.Ctx(t), id)
			return err == nil
		})
		ids = append(ids, id)
	}
	cl, url := serveConsole(t, b)
	return &fixture{b: b, url: url, cl: cl}, ids
}

func TestPages_dead_letters(t *testing.T) {
	var failing atomic.Bool
	f, ids := deadLettered(t, &failing, 2)
	code, body := f.get(t, "/dead-letters")
	if code != 200 {
		t.Fatalf("/dead-letters: %d\n%s", code, body)
	}
	for _, want := range []string{"2 dead letters", `data-key="` + ids[0] + `"`, `data-key="` + ids[1] + `"`,
		"<code>lion.ops.op.later</code>", "<code>unavailable</code>", "backend down", "<td>2</td>",
		`action="/dead-letters/` + ids[0] + `/retry"`, `action="/dead-letters/` + ids[1] + `/delete"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/dead-letters lacks %q", want)
		}
	}

	if missing, ok := ordered(body, `data-key="`+ids[1]+`"`, `data-key="`+ids[0]+`"`); !ok {
		t.Errorf("the dead letters are not newest first: %q out of order", missing)
	}

	// A form posted from another site is refused and changes nothing.
	code, _ = f.post(t, "/dead-letters/"+ids[1]+"/delete", nil, map[string]string{"Origin": "http://elsewhere.example", "Sec-Fetch-Site": "cross-site"})
	if code != http.StatusForbidden {
		t.Errorf("a cross-site delete: %d, want 403", code)
	}
	if _, err := f.cl.DeadLetter(bustest.Ctx(t), ids[1]); err != nil {
		t.Fatalf("the dead letter is gone after a refused delete: %v", err)
	}
	for path, want := range map[string]int{"/dead-letters/a.b/retry": 400, "/dead-letters/" + ids[1] + "/retry": 303} {
		if code, _ := f.post(t, path, nil, nil); code != want {
			t.Errorf("POST %s: %d, want %d", path, code, want)
		}
	}
	// The retry above ran while the worker still fails: the page says
	// what became of it, and a missing key's delete is an error shown.
	code, loc := f.post(t, "/dead-letters/no-such-key/delete", nil, nil)
	if code != http.StatusSeeOther || loc == nil || loc.Query().Get("error") == "" {
		t.Errorf("delete of a missing key: %d %s, want 303 to an error", code, loc)
	}
}

func TestBrowser_dead_letter_retried_and_deleted(t *testing.T) {
	var failing atomic.Bool
	f, ids := deadLettered(t, &failing, 2)
	ctx := browser(t)
	row := func(id string) string { return `document.querySelector('tr.dead-letter-row[data-key="` + id + `"]')` }
	do(t, ctx, chromedp.Navigate(f.url+"/dead-letters"), until(row(ids[0])+` !== null`))
	screenshot(t, ctx, "dead-letters")

	// The backend is back: retry the first from the page.
	failing.Store(false)
	do(t, ctx, chromedp.Click(`tr.dead-letter-row[data-key="`+ids[0]+`"] button.retry`))
	arrived(t, ctx, `document.getElementById("retried") !== null`)
	href := eval[string](t, ctx, `document.getElementById("retried").getAttribute("href")`)
	newID, ok := strings.CutPrefix(href, "/runs/")
	if !ok || newID == ids[0] {
		t.Fatalf("the retry links %q", href)
	}
	res, err := f.b.Await(t, newID).Result()
	if err != nil {
		t.Fatalf("the retried request: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(res.Value, &got); err != nil || got["x"] != float64(0) {
		t.Fatalf("the retried request answered %s (%v), want its data {\"x\": 0}", res.Value, err)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("tr.dead-letter-row").length`); n != 1 {
		t.Fatalf("%d rows after the retry, want 1", n)
	}

	do(t, ctx, chromedp.Click(`tr.dead-letter-row[data-key="`+ids[1]+`"] button.delete`))
	arrived(t, ctx, `document.getElementById("notice") !== null && document.querySelectorAll("tr.dead-letter-row").length === 0`)
	if _, err := f.cl.DeadLetter(bustest.Ctx(t), ids[1]); err == nil {
		t.Fatal("the deleted dead letter is still stored")
	}
}
