package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/wire"
)

// waitBatch submits batch id of n operate items, each calling the tool
// "wait" once (so each finishes only when the test sends on f.gate), and
// one last communicate item whose model fails. The items run one at a
// time, cloned from a template branch.
func (f *fixture) waitBatch(t *testing.T, cl *client.Client, id string, n int) {
	t.Helper()
	reply := `{"answer": "waited", "action_required": true, "action_requests": [{"function": "wait", "arguments": {}}]}`
	f.create(t, id+"-tmpl", []string{reply}, "wait")
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, `{"custom_id": "item-%d", "verb": "operate", "data": {"instruction": "wait", "actions": true, "response_format": {"title": "W", "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}}`+"\n", i)
	}
	in.WriteString(`{"custom_id": "doomed", "verb": "communicate", "data": {"instruction": "fail", "chat_model": {"provider": "scripted", "replies": [{"error": "the model is out"}]}}}` + "\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cl.SubmitBatch(ctx, client.BatchSpec{ID: id, TemplateBranch: id + "-tmpl", Concurrency: 1, KeepBranches: true}, strings.NewReader(in.String())); err != nil {
		t.Fatal(err)
	}
}

// release lets n calls of the tool "wait" finish.
func (f *fixture) release(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case f.gate <- struct{}{}:
		case <-time.After(30 * time.Second):
			t.Fatal("no call of the tool wait came")
		}
	}
}

// ended waits until batch id has ended and returns its record and its
// results.
func ended(t *testing.T, cl *client.Client, id string) (*wire.Batch, []wire.BatchResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last *wire.Batch
	if err := cl.WatchBatch(ctx, id, func(b *wire.Batch) error { last = b; return nil }); err != nil {
		t.Fatal(err)
	}
	var results []wire.BatchResult
	if err := cl.BatchResults(ctx, id, 0, false, func(r wire.BatchResult) error { results = append(results, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return last, results
}

func TestPages_batches(t *testing.T) {
	f := newFixture(t)
	cl := f.cl
	f.waitBatch(t, cl, "pages-batch", 2)
	f.release(t, 2)
	b, results := ended(t, cl, "pages-batch")
	if b.State != wire.BatchCompleted || b.Counts.Succeeded != 2 || b.Counts.Failed != 1 {
		t.Fatalf("batch: state %s counts %+v, want completed with 2 succeeded and 1 failed", b.State, b.Counts)
	}
	var failed wire.BatchResult
	for _, r := range results {
		if r.CustomID == "doomed" {
			failed = r
		}
	}
	if failed.Error == nil || failed.Error.Code == "" {
		t.Fatalf("the failed item's result has no error code: %+v", failed)
	}

	code, body := f.get(t, "/batches")
	if code != 200 {
		t.Fatalf("/batches: %d\n%s", code, body)
	}
	for _, want := range []string{`href="/batches/pages-batch"`, `max="3" value="3"`, "completed"} {
		if !strings.Contains(body, want) {
			t.Errorf("/batches lacks %q:\n%s", want, body)
		}
	}

	code, body = f.get(t, "/batches/pages-batch")
	if code != 200 {
		t.Fatalf("/batches/pages-batch: %d\n%s", code, body)
	}
	wants := []string{
		`id="batch-progress" max="3" value="3"`, "100 %",
		`data-count="succeeded">2<`, `data-count="failed">1<`,
		`<td>doomed</td><td>failed</td><td><code>` + failed.Error.Code + `</code>`,
		"the model is out",
		`href="/runs/` + failed.RequestID + `"`,
	}
	for _, r := range results {
		if r.BranchID != "" && r.Status == wire.ItemSucceeded {
			wants = append(wants, `href="/branches/`+r.BranchID+`"`)
		}
	}
	for _, want := range wants {
		if !strings.Contains(body, want) {
			t.Errorf("the batch page lacks %q", want)
		}
	}
	if missing, ok := ordered(body, "Failures", "doomed", "Items", "item-0"); !ok {
		t.Errorf("the batch page lacks %q in order", missing)
	}

	for path, want := range map[string]int{"/batches/no-such-batch": 404, "/batches/not%20an%20id": 400} {
		if code, _ := f.get(t, path); code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
	}
}

func TestBrowser_batch_progress_moves_to_100(t *testing.T) {
	f := newFixture(t)
	f.waitBatch(t, f.cl, "live-batch", 2)
	ctx := browser(t)
	// The first item is held in its tool call: nothing has finished yet.
	do(t, ctx, chromedp.Navigate(f.url+"/batches/live-batch"),
		until(`document.querySelector("#batch .live-status").textContent !== ""`))
	eval[bool](t, ctx, `window.sameDocument = true`)
	if v := eval[int](t, ctx, `document.getElementById("batch-progress").value`); v != 0 {
		t.Fatalf("progress %d before any item finished, want 0", v)
	}

	// Each item released moves the bar, without a reload.
	f.release(t, 1)
	do(t, ctx, until(`document.getElementById("batch-progress").value === 1`))
	if got := eval[string](t, ctx, `document.getElementById("batch-percent").textContent`); got != "33 %" {
		t.Fatalf("percent %q after one of three, want 33 %%", got)
	}
	screenshot(t, ctx, "batch-running")
	f.release(t, 1)
	do(t, ctx, until(`document.querySelector("#batch .live-status").textContent === "ended"`))
	got := eval[[]string](t, ctx, `[document.getElementById("batch-percent").textContent, document.getElementById("batch-state").textContent,
		String(document.getElementById("batch-progress").value), document.querySelector('[data-count="failed"]').textContent,
		[...document.querySelectorAll("tr.failure-row td:first-child")].map(td => td.textContent).join(","),
		String(document.querySelectorAll("tr.item-row").length), String(window.sameDocument)]`)
	want := []string{"100 %", "completed", "3", "1", "doomed", "3", "true"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the page at the end shows %q, want %q", got, want)
	}
	screenshot(t, ctx, "batch")

	do(t, ctx, chromedp.Navigate(f.url+"/batches"), until(`document.querySelectorAll("tr.batch-row").length === 1`))
	if v := eval[string](t, ctx, `document.querySelector("tr.batch-row progress").value + "/" + document.querySelector("tr.batch-row progress").max`); v != "3/3" {
		t.Fatalf("the list's progress is %s, want 3/3", v)
	}
	screenshot(t, ctx, "batches")
}
