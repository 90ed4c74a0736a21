package journal_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/journal"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/ops"
)

// The journal on the embedded server: what is put is got back whole, a
// key never put is reported missing, the last put of a key wins, and a
// completion over MaxEntryBytes is refused.
func TestStore(t *testing.T) {
	srv := bustest.NewServer(t)
	_, js := bustest.Connect(t, srv)
	res := bustest.Provision(t, js, provision.Config{Prefix: "jr"})
	s := journal.New(js, res.Journal, res.Subjects)
	ctx := bustest.Ctx(t)

	c := &ops.Completion{Text: "three", ToolCalls: []ops.ToolCall{{ID: "c1", Name: "add", Arguments: map[string]any{"x": 1.0}}},
		Usage: &ops.Usage{InputTokens: 10, OutputTokens: 2, TotalTokens: 12, CostUSD: 0.001}, Raw: json.RawMessage(`{"id":"x"}`), SessionID: "s1"}
	if err := s.Put(ctx, "req-1/react/0/middle.0123abcd", c); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Get(ctx, "req-1/react/0/middle.0123abcd")
	if err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	if a, b := mustJSON(t, got), mustJSON(t, c); a != b {
		t.Fatalf("got %s, want %s", a, b)
	}
	if _, ok, err := s.Get(ctx, "req-2.ffff"); ok || err != nil {
		t.Fatalf("a key never put: %v %v", ok, err)
	}
	if err := s.Put(ctx, "req-1/react/0/middle.0123abcd", &ops.Completion{Text: "again"}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Get(ctx, "req-1/react/0/middle.0123abcd"); got.Text != "again" {
		t.Fatalf("the last put did not win: %+v", got)
	}
	err = s.Put(ctx, "big.1", &ops.Completion{Text: strings.Repeat("x", journal.MaxEntryBytes)})
	if !errors.Is(err, journal.ErrTooLarge) {
		t.Fatalf("an oversize completion: %v", err)
	}
	info, err := res.Journal.Info(ctx)
	if err != nil || info.Config.MaxMsgsPerSubject != 1 || info.Config.MaxAge != provision.DefaultJournalMaxAge {
		t.Fatalf("journal stream: %+v %v", info, err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
