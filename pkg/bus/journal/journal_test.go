package journal_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/journal"
	"github.com/lionbus/lionbus/pkg/bus/provision"
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

	c := []byte(`{"text":"three","usage":{"input_tokens":10,"output_tokens":2,"total_tokens":12}}`)
	if err := s.Put(ctx, "req-1/react/0/middle.0123abcd", c); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Get(ctx, "req-1/react/0/middle.0123abcd")
	if err != nil || !ok || string(got) != string(c) {
		t.Fatalf("get: %s %v %v", got, ok, err)
	}
	if _, ok, err := s.Get(ctx, "req-2.ffff"); ok || err != nil {
		t.Fatalf("a key never put: %v %v", ok, err)
	}
	if err := s.Put(ctx, "req-1/react/0/middle.0123abcd", []byte(`{"text":"again"}`)); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Get(ctx, "req-1/react/0/middle.0123abcd"); string(got) != `{"text":"again"}` {
		t.Fatalf("the last put did not win: %s", got)
	}
	err = s.Put(ctx, "big.1", []byte(strings.Repeat("x", journal.MaxEntryBytes+1)))
	if !errors.Is(err, journal.ErrTooLarge) {
		t.Fatalf("an oversize completion: %v", err)
	}
	info, err := res.Journal.Info(ctx)
	if err != nil || info.Config.MaxMsgsPerSubject != 1 || info.Config.MaxAge != provision.DefaultJournalMaxAge {
		t.Fatalf("journal stream: %+v %v", info, err)
	}
}
