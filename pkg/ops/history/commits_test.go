package history_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/history"
)

// appended returns c with n commits appended: ids prefix0, prefix1, ...
// at sequences from+0, from+1, ...
func appended(c history.Commits, prefix string, n int, from uint64) history.Commits {
	for i := range n {
		c = c.Append(fmt.Sprintf("%s%d", prefix, i), from+uint64(i))
	}
	return c
}

func commitList(c history.Commits) []history.Commit {
	var list []history.Commit
	for id, seq := range c.All() {
		list = append(list, history.Commit{ID: id, Seq: seq})
	}
	return list
}

func TestCommits_remember_exactly_the_last_MaxRememberedCommits(t *testing.T) {
	const bound = history.MaxRememberedCommits
	tests := []struct {
		name string
		n    int
	}{
		{"none", 0},
		{"one", 1},
		{"one block", 64},
		{"one below the bound", bound - 1},
		{"at the bound", bound},
		{"one beyond the bound", bound + 1},
		{"a block beyond the bound", bound + 64},
		{"a block and one beyond the bound", bound + 65},
		{"three times the bound", 3*bound + 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := appended(history.Commits{}, "r", tt.n, 1)
			kept := min(tt.n, bound)
			if c.Len() != kept || c.IsZero() != (kept == 0) {
				t.Fatalf("Len = %d, IsZero = %t; want %d", c.Len(), c.IsZero(), kept)
			}
			oldest := tt.n - kept // the index of the oldest commit kept
			if oldest > 0 {
				if _, ok := c.Seq(fmt.Sprintf("r%d", oldest-1)); ok {
					t.Errorf("r%d, the newest commit beyond the bound, is remembered", oldest-1)
				}
			}
			if kept > 0 {
				if seq, ok := c.Seq(fmt.Sprintf("r%d", oldest)); !ok || seq != uint64(oldest+1) {
					t.Errorf("oldest kept r%d = %d, %t; want %d", oldest, seq, ok, oldest+1)
				}
			}
			list := commitList(c)
			if len(list) != kept {
				t.Fatalf("All yields %d commits, want %d", len(list), kept)
			}
			for i, x := range list {
				if want := (history.Commit{ID: fmt.Sprintf("r%d", oldest+i), Seq: uint64(oldest + i + 1)}); x != want {
					t.Fatalf("All()[%d] = %v, want %v", i, x, want)
				}
			}
		})
	}
}

func TestCommits_lookups_across_block_boundaries(t *testing.T) {
	const bound = history.MaxRememberedCommits
	for _, n := range []int{63, 64, 65, 127, 128, 129, bound, bound + 1, bound + 63, bound + 64, bound + 65, 2*bound + 31} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := appended(history.Commits{}, "r", n, 10)
			for i := range n {
				seq, ok := c.Seq(fmt.Sprintf("r%d", i))
				if want := i >= n-bound; ok != want || (ok && seq != uint64(10+i)) {
					t.Fatalf("Seq(r%d) = %d, %t; want remembered %t at %d", i, seq, ok, want, 10+i)
				}
			}
			for _, id := range []string{"", "r", fmt.Sprintf("r%d", n), "x0"} {
				if seq, ok := c.Seq(id); ok {
					t.Fatalf("Seq(%q) = %d, never appended", id, seq)
				}
			}
		})
	}
}

func TestCommits_Append_of_a_remembered_id_keeps_the_first(t *testing.T) {
	const bound = history.MaxRememberedCommits
	tests := []struct {
		name    string
		n       int    // commits r0.. appended first
		again   string // then appended again, at sequence 1_000_000
		wantSeq uint64 // 0: not remembered
	}{
		{"the newest", 10, "r9", 10},
		{"the oldest", 10, "r0", 1},
		{"in a full block", 200, "r70", 71},
		{"the oldest at the bound", bound, "r0", 1},
		{"one forgotten", bound + 1, "r0", 1_000_000},
		{"the oldest kept", bound + 1, "r1", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := appended(history.Commits{}, "r", tt.n, 1)
			d := c.Append(tt.again, 1_000_000)
			seq, ok := d.Seq(tt.again)
			if !ok || seq != tt.wantSeq {
				t.Fatalf("Seq(%s) = %d, %t; want %d", tt.again, seq, ok, tt.wantSeq)
			}
			if tt.wantSeq != 1_000_000 && !slices.Equal(commitList(d), commitList(c)) {
				t.Errorf("appending a remembered id changed the commits")
			}
		})
	}
}

// TestCommits_values_share_nothing_they_can_see: values derived from one
// value, appended to at once by different goroutines, each see their own
// commits only, and the value they come from is unchanged.
func TestCommits_values_share_nothing_they_can_see(t *testing.T) {
	const bound = history.MaxRememberedCommits
	for _, n := range []int{0, 1, 63, 64, 65, bound - 1, bound, bound + 30, bound + 64} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			base := appended(history.Commits{}, "base", n, 1)
			want := commitList(base)
			const forks, each = 4, 150
			got := make([]history.Commits, forks)
			var wg sync.WaitGroup
			for f := range forks {
				wg.Go(func() {
					c := base
					for i := range each {
						c = c.Append(fmt.Sprintf("f%d-%d", f, i), uint64(n+1+i))
						if _, ok := base.Seq(fmt.Sprintf("base%d", n-1)); ok != (n > 0) { // read while others append
							t.Errorf("base lost its newest commit")
						}
					}
					got[f] = c
				})
			}
			wg.Wait()
			if !slices.Equal(commitList(base), want) {
				t.Fatalf("base changed")
			}
			for f, c := range got {
				for id := range c.All() {
					if strings.HasPrefix(id, "f") && !strings.HasPrefix(id, fmt.Sprintf("f%d-", f)) {
						t.Fatalf("fork %d sees %s", f, id)
					}
				}
				wantList := commitList(appended(base, fmt.Sprintf("f%d-", f), each, uint64(n+1)))
				if !slices.Equal(commitList(c), wantList) {
					t.Fatalf("fork %d holds %d commits, not the %d it appended after base", f, c.Len(), len(wantList))
				}
			}
		})
	}
}

func TestCommits_NewCommits_orders_by_sequence(t *testing.T) {
	const bound = history.MaxRememberedCommits
	tests := []struct {
		name string
		list []history.Commit
		want []history.Commit
	}{
		{"empty", nil, nil},
		{"in order", []history.Commit{{"a", 1}, {"b", 2}}, []history.Commit{{"a", 1}, {"b", 2}}},
		{"out of order", []history.Commit{{"b", 5}, {"c", 9}, {"a", 1}}, []history.Commit{{"a", 1}, {"b", 5}, {"c", 9}}},
		{"equal sequences by id", []history.Commit{{"b", 5}, {"a", 5}}, []history.Commit{{"a", 5}, {"b", 5}}},
		{"a repeated id keeps the first", []history.Commit{{"a", 7}, {"a", 3}, {"b", 4}}, []history.Commit{{"a", 3}, {"b", 4}}},
	}
	var long, last []history.Commit
	for i := range bound + 3 {
		long = append(long, history.Commit{ID: fmt.Sprintf("r%d", i), Seq: uint64(i + 1)})
	}
	last = slices.Clone(long[3:])
	slices.Reverse(long)
	tests = append(tests, struct {
		name string
		list []history.Commit
		want []history.Commit
	}{"beyond the bound keeps the newest", long, last})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.list)
			c := history.NewCommits(tt.list)
			if got := commitList(c); !slices.Equal(got, tt.want) {
				t.Errorf("%d commits %.200v, want %d: %.200v", len(got), got, len(tt.want), tt.want)
			}
			if !slices.Equal(tt.list, before) {
				t.Errorf("NewCommits changed its argument")
			}
		})
	}
}

func TestCommits_JSON_is_an_object_of_ids(t *testing.T) {
	const bound = history.MaxRememberedCommits
	tests := []struct {
		name string
		c    history.Commits
		want string // the "commits" member of the branch, "" if absent
	}{
		{"none", history.Commits{}, ""},
		{"two", history.Commits{}.Append("r2", 7).Append("r1", 9), `{"r1":9,"r2":7}`},
		{"beyond the bound", appended(history.Commits{}, "r", bound+5, 1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := json.Marshal(&history.Branch{ID: "b", Commits: tt.c})
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatal(err)
			}
			member, present := raw["commits"]
			if present != !tt.c.IsZero() {
				t.Fatalf("commits present %t in %s", present, data)
			}
			if tt.want != "" && string(member) != tt.want {
				t.Errorf("commits = %s, want %s", member, tt.want)
			}
			var m map[string]uint64
			if present {
				if err := json.Unmarshal(member, &m); err != nil {
					t.Fatalf("commits is not an object of sequences: %v", err)
				}
			}
			if !maps.Equal(m, maps.Collect(tt.c.All())) {
				t.Errorf("commits object %v, want %v", m, tt.c)
			}
			var back history.Branch
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(commitList(back.Commits), commitList(tt.c)) {
				t.Errorf("decoded %d commits, not the %d encoded, in order", back.Commits.Len(), tt.c.Len())
			}
		})
	}
}

func TestCommits_JSON_null_and_errors(t *testing.T) {
	var c history.Commits
	if err := json.Unmarshal([]byte(`null`), &c); err != nil || !c.IsZero() {
		t.Fatalf("null: %v, %v", err, c)
	}
	if err := json.Unmarshal([]byte(`{"a":"x"}`), &c); err == nil {
		t.Fatal("a string sequence decoded")
	}
	if err := json.Unmarshal([]byte(`[1]`), &c); err == nil {
		t.Fatal("an array decoded")
	}
}

// commitsModel is what Branch.Commits was: a map, trimmed to
// MaxRememberedCommits by removing the smallest sequence, with the order
// of the commits kept beside it.
type commitsModel struct {
	m     map[string]uint64
	order []string
}

func (r *commitsModel) clone() *commitsModel {
	return &commitsModel{maps.Clone(r.m), slices.Clone(r.order)}
}

// apply does what Branch.Apply does with an EventMessages: nothing if the
// id is remembered.
func (r *commitsModel) apply(id string, seq uint64) {
	if _, dup := r.m[id]; dup {
		return
	}
	r.m[id] = seq
	r.order = append(r.order, id)
	for len(r.m) > history.MaxRememberedCommits {
		oldest, oldestSeq := "", uint64(0)
		for id, s := range r.m {
			if oldest == "" || s < oldestSeq || (s == oldestSeq && id < oldest) {
				oldest, oldestSeq = id, s
			}
		}
		delete(r.m, oldest)
		r.order = slices.DeleteFunc(r.order, func(id string) bool { return id == oldest })
	}
}

// FuzzCommits checks Commits against commitsModel. Each byte of the input
// is an operation, by its two low bits, with its six high bits as k:
// append k+1 new ids; append an id seen k*7 ids ago (perhaps remembered,
// perhaps forgotten); look up an id seen k*13 ids ago; set the current
// value aside (k even) or go back to one set aside (k odd), to append to
// it again.
func FuzzCommits(f *testing.F) {
	f.Add([]byte{0, 4, 1, 2})
	f.Fuzz(func(t *testing.T, prog []byte) {
		type state struct {
			c   history.Commits
			ref *commitsModel
		}
		cur := state{ref: &commitsModel{m: map[string]uint64{}}}
		var aside []state
		ids, seq := 0, uint64(0)
		back := func(d int) string { return fmt.Sprintf("id%d", max(ids-1-d, 0)) }
		for i, op := range prog {
			k := int(op >> 2)
			switch op & 3 {
			case 0:
				for range k + 1 {
					seq++
					id := fmt.Sprintf("id%d", ids)
					ids++
					cur.c = cur.c.Append(id, seq)
					cur.ref.apply(id, seq)
				}
			case 1:
				seq++
				id := back(k * 7)
				cur.c = cur.c.Append(id, seq)
				cur.ref.apply(id, seq)
			case 2:
				id := back(k * 13)
				got, ok := cur.c.Seq(id)
				want, wantOK := cur.ref.m[id]
				if got != want || ok != wantOK {
					t.Fatalf("op %d: Seq(%s) = %d, %t; want %d, %t", i, id, got, ok, want, wantOK)
				}
			case 3:
				if k%2 == 0 || len(aside) == 0 {
					aside = append(aside, state{cur.c, cur.ref.clone()})
				} else {
					s := aside[(k/2)%len(aside)]
					cur = state{s.c, s.ref.clone()}
				}
			}
			if cur.c.Len() != len(cur.ref.m) {
				t.Fatalf("op %d: Len = %d, want %d", i, cur.c.Len(), len(cur.ref.m))
			}
		}
		for j, s := range append(aside, cur) {
			var want []history.Commit
			for _, id := range s.ref.order {
				want = append(want, history.Commit{ID: id, Seq: s.ref.m[id]})
			}
			if got := commitList(s.c); !slices.Equal(got, want) {
				t.Fatalf("value %d: All yields %d commits, want %d in order", j, len(got), len(want))
			}
			for _, x := range want {
				if got, ok := s.c.Seq(x.ID); !ok || got != x.Seq {
					t.Fatalf("value %d: Seq(%s) = %d, %t; want %d", j, x.ID, got, ok, x.Seq)
				}
			}
		}
	})
}

// BenchmarkCommits measures a value remembering as many commits as it
// may: appending one (which forgets the oldest) and looking one up.
func BenchmarkCommits(b *testing.B) {
	full := appended(history.Commits{}, "r", history.MaxRememberedCommits, 1)
	ids, known := make([]string, 4*history.MaxRememberedCommits), make([]string, history.MaxRememberedCommits)
	for i := range ids {
		ids[i] = fmt.Sprintf("n%d", i)
	}
	for i := range known {
		known[i] = fmt.Sprintf("r%d", i)
	}
	b.Run("Append", func(b *testing.B) {
		b.ReportAllocs()
		c, seq := full, uint64(history.MaxRememberedCommits)
		for i := 0; b.Loop(); i++ {
			seq++
			c = c.Append(ids[i%len(ids)], seq) // forgotten since it was last appended
		}
	})
	b.Run("Seq/remembered", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, ok := full.Seq(known[i%len(known)]); !ok {
				b.Fatal("not remembered")
			}
		}
	})
	b.Run("Seq/unknown", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, ok := full.Seq(ids[i%len(ids)]); ok {
				b.Fatal("remembered")
			}
		}
	})
}
