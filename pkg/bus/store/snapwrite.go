package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lionbus/lionbus/pkg/bus/internal/bufpool"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"
)

// snapState is what an entry knows of its branch's stored snapshot.
type snapState struct {
	rev     uint64    // bucket revision of the snapshot read or written; 0: none known
	seq     uint64    // history sequence it reflects; 0: none
	segs    []segment // its segments, holding the first covered messages
	covered int
	// rewritten reports that an event folded since the snapshot may have
	// changed messages the segments hold (a clear, a new system message,
	// a re-creation): the next snapshot starts its segments afresh.
	rewritten bool
	events    int // history events folded since the snapshot
	bytes     int // their encoded size
}

// maybeSnapshot writes a snapshot of e when the cadence says so.
func (s *Store) maybeSnapshot(ctx context.Context, e *entry) {
	if e.b == nil || (e.snap.events < s.snapEvents && e.snap.bytes < s.snapBytes) {
		return
	}
	s.writeSnapshot(ctx, e)
}

// writeSnapshot stores e's branch as its snapshot: first the segments of
// messages that do not fit in the snapshot itself, then the snapshot, if
// the bucket still holds the revision e knows of (or an older snapshot).
// Failures are logged, never returned; a failed write is tried again at
// the next event.
func (s *Store) writeSnapshot(ctx context.Context, e *entry) {
	// Best effort: the whole write, segments included, within one
	// request timeout.
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	b := e.b
	segs, covered := e.snap.segs, e.snap.covered
	fresh := e.snap.rewritten || covered > len(b.Messages)
	if fresh {
		segs, covered = nil, 0
	}
	segs = slices.Clip(segs)
	var added []segment
	rest := b.Messages[covered:]
	if len(rest) > 0 {
		runs, size, err := encodeRuns(rest, s.segBytes)
		if err != nil {
			s.log.Warn().Err(err).Str("branch", e.id).Msg("encode branch snapshot segment")
			return
		}
		if size >= s.segBytes {
			// The newest messages outgrew the snapshot: they move into
			// segments, written before the snapshot that lists them.
			for _, r := range runs {
				key := fmt.Sprintf("%s.%d-%d-%d", e.id, b.Seq, covered, r.count)
				if _, err := s.kv.Put(ctx, key, r.data); err != nil {
					s.log.Warn().Err(err).Str("branch", e.id).Str("segment", key).Msg("write branch snapshot segment")
					s.purgeSegments(ctx, added)
					return
				}
				seg := segment{Key: key, Count: r.count}
				added = append(added, seg)
				segs = append(segs, seg)
				covered += r.count
			}
		}
	}
	data, release, err := encodeSnapshot(b, segs, covered)
	if err != nil {
		s.log.Warn().Err(err).Str("branch", e.id).Msg("encode branch snapshot")
		s.purgeSegments(ctx, added)
		return
	}
	defer release()
	if len(data) > s.maxValue-1024 {
		s.log.Warn().Str("branch", e.id).Int("bytes", len(data)).Msg("branch snapshot larger than the max payload; not written")
		s.purgeSegments(ctx, added)
		return
	}
	rev, err := s.putSnapshot(ctx, e.id, data, e.snap.rev, b.Seq)
	if err != nil {
		s.log.Debug().Err(err).Str("branch", e.id).Uint64("seq", b.Seq).Msg("branch snapshot not written")
		var newer *newerSnapshotError
		if !errors.As(err, &newer) || newer.seq != b.Seq {
			// Segment keys name the sequence they were written at, so a
			// writer at another sequence cannot list these.
			s.purgeSegments(ctx, added)
		}
		if errors.As(err, &newer) {
			// Another writer's snapshot is current: the next one starts
			// afresh (its segments are not known here).
			e.snap = snapState{rev: newer.rev, seq: newer.seq, rewritten: true,
				events: e.snap.events, bytes: e.snap.bytes}
			if newer.seq >= b.Seq {
				e.snap.events, e.snap.bytes = 0, 0
			}
		}
		return
	}
	if fresh {
		s.purgeSegments(ctx, e.snap.segs)
	}
	s.obs.SnapshotWritten(e.id, len(data))
	e.snap = snapState{rev: rev, seq: b.Seq, segs: segs, covered: covered}
}

// newerSnapshotError reports that the bucket holds a snapshot at least as
// recent as the one being written.
type newerSnapshotError struct {
	rev, seq uint64
}

func (e *newerSnapshotError) Error() string {
	return fmt.Sprintf("the bucket holds a snapshot of seq %d (revision %d)", e.seq, e.rev)
}

// putSnapshot writes data under key if the bucket holds revision rev (0:
// no value) or a snapshot older than seq, and returns the new revision.
func (s *Store) putSnapshot(ctx context.Context, key string, data []byte, rev, seq uint64) (uint64, error) {
	var err error
	for try := 0; try < 2; try++ {
		var nrev uint64
		if rev == 0 {
			nrev, err = s.kv.Create(ctx, key, data)
		} else {
			nrev, err = s.kv.Update(ctx, key, data, rev)
		}
		if err == nil {
			return nrev, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return 0, err
		}
		// Someone else wrote a snapshot: replace it only if it is older.
		kve, gerr := s.kv.Get(ctx, key)
		if errors.Is(gerr, jetstream.ErrKeyNotFound) {
			rev = 0
			continue
		}
		if gerr != nil {
			return 0, gerr
		}
		if have, derr := snapshotSeq(kve.Value()); derr == nil && have >= seq {
			return 0, &newerSnapshotError{rev: kve.Revision(), seq: have}
		}
		rev = kve.Revision()
	}
	return 0, err
}

// run is a segment's worth of encoded messages.
type run struct {
	data  []byte
	count int
}

// encodeRuns encodes msgs as msgpack arrays of consecutive messages, each
// at most max bytes unless a single message is larger, and returns them
// with the total size of the messages.
func encodeRuns(msgs []history.Message, max int) ([]run, int, error) {
	// The runs are copies (makeRun), so the buffer of them all is reused.
	all, release := bufpool.Get()
	defer release()
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(all)
	ends := make([]int, len(msgs))
	for i := range msgs {
		if err := enc.Encode(&msgs[i]); err != nil {
			return nil, 0, err
		}
		ends[i] = all.Len()
	}
	raw := all.Bytes()
	var runs []run
	start, from := 0, 0
	for i := range msgs {
		if i > from && ends[i]-start > max {
			runs = append(runs, makeRun(raw[start:ends[i-1]], i-from))
			start, from = ends[i-1], i
		}
	}
	runs = append(runs, makeRun(raw[start:], len(msgs)-from))
	return runs, len(raw), nil
}

// makeRun prefixes count encoded messages with a msgpack array header.
func makeRun(body []byte, count int) run {
	var buf bytes.Buffer
	buf.Grow(len(body) + 5)
	enc := msgpack.NewEncoder(&buf)
	_ = enc.EncodeArrayLen(count) // writes to a bytes.Buffer cannot fail
	buf.Write(body)
	return run{data: buf.Bytes(), count: count}
}

// purgeSegments removes segments from the bucket, best-effort.
func (s *Store) purgeSegments(ctx context.Context, segs []segment) {
	for _, seg := range segs {
		s.purgeKeys(ctx, seg.Key)
	}
}

// purgeKeys removes the values of the given bucket keys (wildcards
// allowed) without leaving delete markers, best-effort: failures are
// logged.
func (s *Store) purgeKeys(ctx context.Context, keys ...string) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	st, err := s.bucketStream(ctx)
	if err != nil {
		s.log.Warn().Err(err).Msg("find the branches bucket's stream")
		return
	}
	bucket := s.subj.BranchesBucket()
	for _, k := range keys {
		if err := st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+bucket+"."+k)); err != nil {
			s.log.Warn().Err(err).Str("key", k).Msg("purge branch snapshot")
		}
	}
}

// bucketStream returns the stream behind the branches bucket.
func (s *Store) bucketStream(ctx context.Context) (jetstream.Stream, error) {
	s.kvStreamMu.Lock()
	defer s.kvStreamMu.Unlock()
	if s.kvStream != nil {
		return s.kvStream, nil
	}
	st, err := s.js.Stream(ctx, "KV_"+s.subj.BranchesBucket())
	if err != nil {
		return nil, err
	}
	s.kvStream = st
	return st, nil
}
