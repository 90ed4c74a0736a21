package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/internal/connloss"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// listReaders is how many last-message reads a Branches call has in
// flight at once.
const listReaders = 8

var _ history.Lister = (*Store)(nil)

// Branches lists, by id, the branches whose history subject has messages
// and whose last one is not a tombstone, with ids after after, at most
// limit (limit <= 0 or above history.MaxBranchPage means MaxBranchPage).
// It reads the history stream's subjects (one stream info) and the last
// message of each branch of the page, listReaders at a time; a branch
// deleted between the two is left out.
func (s *Store) Branches(ctx context.Context, after string, limit int) ([]history.Summary, bool, error) {
	if limit <= 0 || limit > history.MaxBranchPage {
		limit = history.MaxBranchPage
	}
	ictx, cancel := s.bounded(ctx)
	info, err := s.stream.Info(ictx, jetstream.WithSubjectFilter(s.subj.HistoryWildcard()))
	err = connloss.Err(ictx, err)
	cancel()
	if err != nil {
		return nil, false, fmt.Errorf("store: list the history subjects: %w", err)
	}
	prefix := s.subj.History("")
	type subject struct {
		id     string
		events uint64
	}
	all := make([]subject, 0, len(info.State.Subjects))
	for subj, n := range info.State.Subjects {
		if id, ok := strings.CutPrefix(subj, prefix); ok && id > after && protocol.ValidToken(id) {
			all = append(all, subject{id, n})
		}
	}
	slices.SortFunc(all, func(a, b subject) int { return strings.Compare(a.id, b.id) })
	out := make([]history.Summary, 0, min(limit, len(all)))
	// Tombstoned branches are skipped, so a page may need more than
	// limit reads: read in windows until it is full or the list ends.
	for len(all) > 0 && len(out) < limit {
		window := all[:min(len(all), limit-len(out))]
		all = all[len(window):]
		got := make([]*history.Summary, len(window))
		errs := make([]error, len(window))
		var wg sync.WaitGroup
		next := make(chan int)
		for range min(listReaders, len(window)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					got[i], errs[i] = s.summary(ctx, window[i].id, window[i].events)
				}
			}()
		}
		for i := range window {
			next <- i
		}
		close(next)
		wg.Wait()
		for i := range window {
			if err := errs[i]; err != nil {
				return nil, false, err
			}
			if got[i] != nil {
				out = append(out, *got[i])
			}
		}
	}
	return out, len(all) > 0, nil
}

// summary reads the last history message of branch id: nil when it is a
// tombstone or there is none any more.
func (s *Store) summary(ctx context.Context, id string, events uint64) (*history.Summary, error) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	m, err := s.stream.GetLastMsgForSubject(ctx, s.subj.History(id))
	err = connloss.Err(ctx, err)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("store: read the last event of branch %s: %w", id, err)
	case m.Header.Get(HeaderEventType) == string(history.EventDeleted):
		return nil, nil
	}
	return &history.Summary{ID: id, Events: events, Updated: m.Time.UTC()}, nil
}
