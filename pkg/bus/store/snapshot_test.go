package store_test

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

func snapshotBranch(commits int) *history.Branch {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	b := &history.Branch{
		ID:        "snap",
		Settings:  history.Settings{System: "sys", Tools: []string{"t"}},
		Messages:  []history.Message{{ID: "m1", Kind: history.KindSystem, Role: history.RoleSystem, CreatedAt: t0, Content: map[string]any{"system_message": "sys"}}},
		Seq:       uint64(commits) + 1,
		CreatedAt: t0, UpdatedAt: t0, ModelCalls: 3,
	}
	if commits > 0 {
		list := make([]history.Commit, 0, commits)
		for i := range commits {
			id := uuid.NewString()
			switch i % 3 {
			case 1:
				id = fmt.Sprintf("r%d", i)
			case 2:
				id = fmt.Sprintf("éß€-%d-%0200d", i, i) // multi-byte, long
			}
			list = append(list, history.Commit{ID: id, Seq: uint64(i + 2)})
		}
		b.Commits = history.NewCommits(list)
	}
	return b
}

// commitList returns c's commits, oldest first.
func commitList(c history.Commits) []history.Commit {
	var list []history.Commit
	for id, seq := range c.All() {
		list = append(list, history.Commit{ID: id, Seq: seq})
	}
	return list
}

func TestSnapshot_round_trip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		commits int
		encode  func(*history.Branch) ([]byte, error)
	}{
		{"no commits", 0, store.EncodeSnapshotForTest},
		{"one commit", 1, store.EncodeSnapshotForTest},
		{"full", history.MaxRememberedCommits, store.EncodeSnapshotForTest},
		{"version 1, no commits", 0, store.EncodeSnapshotV1ForTest},
		{"version 1, full", history.MaxRememberedCommits, store.EncodeSnapshotV1ForTest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := snapshotBranch(tt.commits)
			data, err := tt.encode(want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := store.DecodeSnapshotForTest(data)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !slices.Equal(commitList(got.Commits), commitList(want.Commits)) || got.Commits.Len() != tt.commits {
				t.Fatalf("commits: %d decoded, want %d equal", got.Commits.Len(), want.Commits.Len())
			}
			got.Commits, want.Commits = history.Commits{}, history.Commits{}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("branch\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestSnapshot_truncated_is_an_error: every prefix of a snapshot fails to
// decode, cleanly.
func TestSnapshot_truncated_is_an_error(t *testing.T) {
	t.Parallel()
	data, err := store.EncodeSnapshotForTest(snapshotBranch(40))
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(data) {
		if _, err := store.DecodeSnapshotForTest(data[:n]); err == nil {
			t.Fatalf("a %d-byte prefix of a %d-byte snapshot decoded", n, len(data))
		}
	}
}

// TestStore_reads_version_1_snapshots: a snapshot written by the earlier
// encoding is used as it is, not rebuilt, and keeps the branch's commits.
func TestStore_reads_version_1_snapshots(t *testing.T) {
	t.Parallel()
	b := setupStore(t)
	ctx := bustest.Ctx(t)
	if _, err := b.store.Create(ctx, "v1", createdEvent("c", "sys")); err != nil {
		t.Fatal(err)
	}
	var br *history.Branch
	for i := range 3 {
		var err error
		if br, err = b.store.Append(ctx, "v1", messagesEvent(fmt.Sprintf("r%d", i), "x")); err != nil {
			t.Fatal(err)
		}
	}
	data, err := store.EncodeSnapshotV1ForTest(br)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := b.res.Branches.Put(ctx, "v1", data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.store.Load(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(commitList(got.Commits), commitList(br.Commits)) || got.Commits.Len() != 3 {
		t.Fatalf("commits %v, want %v", got.Commits, br.Commits)
	}
	entry, err := b.res.Branches.Get(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if entry.Revision() != rev {
		t.Errorf("snapshot rewritten (revision %d, was %d): the version 1 snapshot was not used", entry.Revision(), rev)
	}
	// A redelivered request is still recognised.
	if _, err := b.store.Append(ctx, "v1", messagesEvent("r1", "again")); !errors.Is(err, history.ErrAlreadyCommitted) {
		t.Fatalf("Append of a committed request = %v, want ErrAlreadyCommitted", err)
	}
}

// TestSnapshot_reads_stored_snapshots: snapshots written before commits
// were kept in order (testdata, version 1 with the commits inside the
// branch as a map, version 3 with them beside it as a table in map order)
// decode to the same branch, remembering every commit in order of
// sequence, and a later commit forgets the oldest.
func TestSnapshot_reads_stored_snapshots(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	want := make([]history.Commit, history.MaxRememberedCommits)
	for i := range want {
		want[i] = history.Commit{ID: fmt.Sprintf("r%d", i), Seq: uint64(i + 2)}
	}
	for _, file := range []string{"snapshot-v1.msgpack", "snapshot-v3.msgpack"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile("testdata/" + file)
			if err != nil {
				t.Fatal(err)
			}
			b, err := store.DecodeSnapshotForTest(data)
			if err != nil {
				t.Fatal(err)
			}
			if b.ID != "golden" || b.Seq != history.MaxRememberedCommits+1 || !b.UpdatedAt.Equal(t0) || len(b.Messages) != 1 || b.Settings.System != "sys" {
				t.Fatalf("branch %+v", b)
			}
			if got := commitList(b.Commits); !slices.Equal(got, want) {
				t.Fatalf("%d commits decoded, want the %d in order of sequence", len(got), len(want))
			}
			next := b.Seq + 1
			if err := b.Apply(history.Event{Seq: next, Type: history.EventMessages, BranchID: "golden", RequestID: "new"}); err != nil {
				t.Fatal(err)
			}
			if _, ok := b.Commits.Seq("r0"); ok || b.Commits.Len() != history.MaxRememberedCommits {
				t.Errorf("after one more commit: r0 remembered, or %d commits", b.Commits.Len())
			}
			if seq, ok := b.Commits.Seq("new"); !ok || seq != next {
				t.Errorf("new commit at %d, %t; want %d", seq, ok, next)
			}
		})
	}
}
