// Command projection is an example of a projection built from lionbus's
// change feed (docs/history.md, "The change feed"): a table of every
// branch — its own messages, its events, its last activity, what it was
// forked from, how many forks were made of it — kept in a JSON file with
// the sequence of the last change it folded, so that it resumes there
// after a restart, and can be rebuilt from zero by starting without the
// file. Deleted branches leave the table (their tombstones are counted).
//
//	go run ./examples/projection --nats nats://127.0.0.1:4222 --state table.json
//	go run ./examples/projection --state table.json --follow
//
// A fork's messages count its own: its parent's prefix is the parent's.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/wire"
)

// Row is what the table holds of one branch.
type Row struct {
	// Messages counts the branch's messages (a fork's own), System the
	// system messages among them.
	Messages int `json:"messages"`
	System   int `json:"system"`
	// Events counts the branch's changes; LastSeq and LastActivity are
	// the last one's.
	Events       int       `json:"events"`
	LastSeq      uint64    `json:"last_seq"`
	LastActivity time.Time `json:"last_activity"`
	// ForkOf and ForkSeq name the parent of a fork; Forks counts the
	// forks made of the branch.
	ForkOf  string `json:"fork_of,omitempty"`
	ForkSeq uint64 `json:"fork_seq,omitempty"`
	Forks   int    `json:"forks,omitempty"`
}

// Table is the projection: its rows, and where the feed was read to.
type Table struct {
	// After is the sequence of the last change folded: where to resume.
	After uint64 `json:"after"`
	// Branches are the rows by branch id.
	Branches map[string]*Row `json:"branches"`
	// Deleted counts the tombstones folded.
	Deleted int `json:"deleted"`
}

// Apply folds one change into t.
func (t *Table) Apply(c wire.Change) {
	ev := c.Data
	t.After = c.LionSeq
	if ev.Type == wire.EventDeleted {
		delete(t.Branches, c.Subject)
		t.Deleted++
		return
	}
	r := t.Branches[c.Subject]
	if r == nil || ev.Type == wire.EventCreated {
		r = &Row{}
		t.Branches[c.Subject] = r
	}
	switch ev.Type {
	case wire.EventCreated:
		if ev.Fork != nil {
			r.ForkOf, r.ForkSeq = ev.Fork.BranchID, ev.Fork.Seq
		}
		r.add(ev.Messages)
	case wire.EventMessages:
		if ev.Clear {
			r.Messages = r.System
		}
		r.add(ev.Messages)
	case wire.EventCleared:
		r.Messages = r.System
	case wire.EventUpdated:
		if ev.Settings != nil && ev.Settings.System != "" && r.System == 0 {
			r.System, r.Messages = 1, r.Messages+1 // a system message added
		}
	case wire.EventForked:
		r.Forks++
	case wire.EventCompacted:
		// A compaction point holds the whole state: a table rebuilt
		// after retention dropped the events before it starts here.
		if ev.Compaction != nil {
			r.Messages, r.System = 0, 0
			r.add(ev.Compaction.Messages)
		}
	}
	r.Events++
	r.LastSeq, r.LastActivity = c.LionSeq, ev.Time
}

func (r *Row) add(msgs []wire.Message) {
	for _, m := range msgs {
		r.Messages++
		if m.Kind == wire.KindSystem {
			r.System++
		}
	}
}

// load reads the table of path; a missing file is an empty table.
func load(path string) (*Table, error) {
	t := &Table{Branches: map[string]*Row{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if t.Branches == nil {
		t.Branches = map[string]*Row{}
	}
	return t, nil
}

// save writes the table to path whole or not at all.
func save(path string, t *Table) error {
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".projection-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// saveEvery is how many changes are folded between two saves.
const saveEvery = 500

// run brings the table of state up to date with the feed (and, with
// follow, keeps it so until ctx ends), printing what it did to out.
func run(ctx context.Context, cl *client.Client, state string, follow bool, out io.Writer) error {
	t, err := load(state)
	if err != nil {
		return err
	}
	from, n := t.After, 0
	err = cl.Changes(ctx, client.ChangesOptions{After: t.After, Follow: follow}, func(c wire.Change) error {
		t.Apply(c)
		if n++; n%saveEvery == 0 || follow {
			return save(state, t)
		}
		return nil
	})
	if follow && errors.Is(err, context.Canceled) {
		err = nil
	}
	if err != nil {
		return err
	}
	if err := save(state, t); err != nil {
		return err
	}
	fmt.Fprintf(out, "folded %d changes after seq %d: %d branches, up to seq %d\n", n, from, len(t.Branches), t.After)
	return nil
}

func main() {
	url := flag.String("nats", nats.DefaultURL, "NATS server URL")
	prefix := flag.String("prefix", "lion", "lionbus subject prefix")
	state := flag.String("state", "projection.json", "the table's file (resumed from, written to)")
	follow := flag.Bool("follow", false, "keep the table up to date until interrupted")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	nc, err := nats.Connect(*url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "projection:", err)
		os.Exit(2)
	}
	defer nc.Close()
	cl, err := client.New(nc, client.Config{Prefix: *prefix})
	if err != nil {
		fmt.Fprintln(os.Stderr, "projection:", err)
		os.Exit(2)
	}
	if err := run(ctx, cl, *state, *follow, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "projection:", err)
		os.Exit(1)
	}
}
