package console_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/wire"
)

// chromium returns the path of a Chromium (or Chrome) binary: $CHROMIUM,
// else /usr/bin/chromium, else one on PATH. Without one the test is
// skipped, with a message saying how to get one — or fails when
// LIONBUS_REQUIRE_BROWSER is set, as CI sets it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("LIONBUS_REQUIRE_BROWSER") != "" {
		t.Fatal("no Chromium found, and LIONBUS_REQUIRE_BROWSER is set (.ci/run sets it after installing Chromium)")
	}
	t.Skip("no Chromium found (set CHROMIUM, or apt-get install chromium; .ci/run installs it)")
	return ""
}

// browser is a headless Chromium tab at laptop size; it closes when the
// test ends.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1280, 800),
		chromedp.Flag("disable-dev-shm-usage", true))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return bctx
}

// eval returns the value of the JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// arrived waits for the JavaScript expression to be true in the page
// after a navigation: evaluating it fails while the old page goes away,
// and is tried again until ctx ends.
func arrived(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	for ctx.Err() == nil {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the page never got to %s", expr)
}

// do runs the steps in the page.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// until waits for the JavaScript expression to be true in the page.
func until(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr)(ctx, tg)
		return err
	})
}

// screenshot saves the page as docs/console/name.png, in light and, as
// name-dark.png, in dark, when LIONBUS_SCREENSHOTS=1.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("LIONBUS_SCREENSHOTS") != "1" {
		return
	}
	dir := filepath.Join("..", "..", "..", "docs", "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, scheme := range []string{"light", "dark"} {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		if err != nil {
			t.Fatalf("dark mode: %v", err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		file := name + ".png"
		if scheme == "dark" {
			file = name + "-dark.png"
		}
		if err := os.WriteFile(filepath.Join(dir, file), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// rowsJS is the branch ids of the branch list, in order.
const rowsJS = `[...document.querySelectorAll("tr.branch-row td:first-child")].map(td => td.textContent)`

func TestBrowser_branch_list_shows_created_branches(t *testing.T) {
	f := newFixture(t)
	ids := []string{"orders-eu", "orders-us", "support-7"}
	for _, id := range ids {
		f.communicated(t, id, "Status?", "All good.")
	}
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(f.url+"/branches"), chromedp.WaitVisible(chromedp.CSS(`table.list`)))
	rows := eval[[]string](t, ctx, rowsJS)
	count := eval[string](t, ctx, `document.getElementById("count").textContent`)
	// Newest first: the reverse of the creation order.
	if strings.Join(rows, " ") != "support-7 orders-us orders-eu" || count != "3 branches" {
		t.Fatalf("rows %q, count %q", rows, count)
	}
	screenshot(t, ctx, "branches")

	// Search by keyboard: type into the field, press Enter.
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#q`), "orders\r"))
	arrived(t, ctx, `location.search === "?q=orders" && document.readyState === "complete"`)
	rows = eval[[]string](t, ctx, rowsJS)
	if strings.Join(rows, " ") != "orders-us orders-eu" {
		t.Fatalf("search rows %q", rows)
	}
}

func TestBrowser_branch_page_shows_messages_and_tool_calls(t *testing.T) {
	f := newFixture(t)
	f.communicated(t, "talk", "Say hi to Lyon", "Bonjour Lyon")
	f.operated(t, "work")
	ctx := browser(t)

	do(t, ctx, chromedp.Navigate(f.url+"/branches/talk"), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
	kinds := eval[[]string](t, ctx, `[...document.querySelectorAll("#timeline .msg")].map(m => m.dataset.kind || "system")`)
	texts := eval[[]string](t, ctx, `[...document.querySelectorAll("#timeline .msg pre")].map(p => p.textContent)`)
	if strings.Join(kinds, " ") != "system instruction assistant_response" ||
		strings.Join(texts, "|") != "You are terse.|Say hi to Lyon|Bonjour Lyon" {
		t.Fatalf("talk: kinds %q texts %q", kinds, texts)
	}
	screenshot(t, ctx, "branch")

	do(t, ctx, chromedp.Navigate(f.url+"/branches/work"), chromedp.WaitVisible(chromedp.CSS(`#timeline`)))
	calls := eval[[]map[string]string](t, ctx, `[...document.querySelectorAll("#timeline .msg.action_response")].map(m => ({
			function: m.querySelector(".function").textContent,
			arguments: (m.querySelector(".arguments") || {}).textContent || "",
			output: (m.querySelector(".output") || {}).textContent || "",
			error: (m.querySelector(".tool-error") || {}).textContent || ""}))`)
	got := map[string]map[string]string{}
	for _, c := range calls {
		got[c["function"]] = c
	}
	if add := got["add"]; !strings.Contains(add["arguments"], `"x": 20`) || !strings.Contains(add["output"], `"sum": 42`) || add["error"] != "" {
		t.Errorf("add: %q", add)
	}
	if ex := got["explode"]; !strings.Contains(ex["error"], "the fuse blew") || ex["output"] != "" {
		t.Errorf("explode: %q", ex)
	}
	if len(calls) != 2 {
		t.Errorf("%d tool results shown, want 2: %q", len(calls), calls)
	}
	screenshot(t, ctx, "branch-tools")
}

func TestBrowser_run_page_shows_chunks_live(t *testing.T) {
	f := newFixture(t)
	const reply = "streamed words arrive one by one"
	f.create(t, "live", []string{reply})
	ctx := browser(t)
	id := uuid.NewString()

	// The page is open, and following, before the request exists.
	do(t, ctx, chromedp.Navigate(f.url+"/runs/"+id), until(`document.getElementById("run-status").textContent === "streaming"`))
	var seen []wire.Chunk
	_, r, err := f.b.Client.Stream(bustest.Ctx(t), "communicate", "live", map[string]any{"instruction": "stream it", "stream": true},
		func(c wire.Chunk) error { seen = append(seen, c); return nil }, client.WithID(id))
	if err != nil || r.Err() != nil {
		t.Fatalf("stream: %v %v", err, r.Err())
	}
	if len(seen) < 2 {
		t.Fatalf("the model streamed %d chunks", len(seen))
	}
	do(t, ctx, until(`document.getElementById("run-status").textContent.startsWith("answered")`))
	text := eval[string](t, ctx, `[...document.querySelectorAll("#chunks .chunk.text .content")].map(c => c.textContent).join("|")`)
	status := eval[string](t, ctx, `document.getElementById("run-status").textContent`)
	if strings.TrimSpace(text) != reply || status != "answered: lionbus.communicate.result" {
		t.Fatalf("page text %q, status %q", text, status)
	}
	screenshot(t, ctx, "run")
}

func TestBrowser_branch_page_updates_live(t *testing.T) {
	f := newFixture(t)
	f.create(t, "chat", []string{"first answer", "second answer"})
	bustest.MustResult(t, f.b.Do(t, "communicate", "chat", map[string]any{"instruction": "first question"}), nil)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(f.url+"/branches/chat"),
		until(`document.querySelector(".live-status").textContent === "live"`))
	if n := eval[int](t, ctx, `document.querySelectorAll("#timeline .event").length`); n != 2 {
		t.Fatalf("%d events before, want 2", n)
	}
	// A communicate while the page is open shows up without a reload.
	bustest.MustResult(t, f.b.Do(t, "communicate", "chat", map[string]any{"instruction": "second question"}), nil)
	do(t, ctx, until(`document.getElementById("timeline").textContent.includes("second answer")`))
	if n := eval[int](t, ctx, `document.querySelectorAll("#timeline .event").length`); n != 3 {
		t.Fatalf("%d events after, want 3", n)
	}
	if got := eval[string](t, ctx, `document.getElementById("message-count").textContent`); got != "5" {
		t.Fatalf("message count %q, want 5", got)
	}
}
