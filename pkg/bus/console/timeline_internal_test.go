package console

import (
	"html/template"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/wire"
)

// A parked call and a compaction point show what they record on the
// timeline, not only their type.
func TestTimeline_shows_approval_requests_and_compactions(t *testing.T) {
	pages, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	events := []wire.Event{
		{Seq: 7, Type: wire.EventApprovalRequested, Approval: &wire.ApprovalRequest{ID: "ap1", Tool: "refund", Arguments: map[string]any{"amount": 10}, Deadline: deadline, OnDeadline: "deny"}},
		{Seq: 9, Type: wire.EventCompacted, Compaction: &wire.Compaction{Head: 8, Messages: make([]wire.Message, 3), DroppedBefore: 5, DroppedEvents: 4, Reason: "keep_events=2"}},
	}
	tl, _ := timeline(events)
	var b strings.Builder
	if err := pages.ExecuteTemplate(&b, "branch.html", branchPage{Title: "t", Branch: wire.Branch{ID: "b"}, Timeline: tl}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`approval requested for <code class="function">refund</code>`, `&#34;amount&#34;: 10`, "2026-12-05 10:00:00.000 UTC", "(deny)",
		"compaction point: the branch as of seq 8, 3 messages; the 4 events before seq 5 are dropped (keep_events=2)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the timeline lacks %q:\n%s", want, b.String())
		}
	}
}
