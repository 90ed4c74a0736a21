package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/lionbus/lionbus/pkg/bus/internal/bufpool"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/vmihailenco/msgpack/v5"
)

// Snapshot encoding versions. Version 1 held Branch.Commits inside the
// branch as a msgpack map (which the branch's own encoding now leaves
// out); version 2 holds it beside the branch as a [commitTable]; version
// 3 keeps the older messages in segments (see snapState) and only the
// newest in the snapshot itself. All are read; version 3 is written.
const (
	snapshotVersionMap   = 1
	snapshotVersionTable = 2
	snapshotVersion      = 3
)

// snapshot is the value stored in the branches bucket under the branch
// id: the folded branch, the history sequence it reflects and, from
// version 2, the branch's commits (Branch.Commits is left out of Branch
// by its msgpack tag). From version 3, Branch.Messages holds only the messages after
// those kept in Segments, and Total counts them all.
type snapshot struct {
	Version  int             `msgpack:"v"`
	Seq      uint64          `msgpack:"seq"`
	Branch   *history.Branch `msgpack:"branch"`
	Commits  commitTable     `msgpack:"commits,omitempty"`
	Segments []segment       `msgpack:"segs,omitempty"`
	Total    int             `msgpack:"n,omitempty"`
}

// segment names one stored run of a branch's messages: the bucket key
// that holds them (see segmentKey) and how many there are.
type segment struct {
	Key   string `msgpack:"k"`
	Count int    `msgpack:"c"`
}

// snapshotHead is the start of a snapshot, decoded without the branch.
type snapshotHead struct {
	Version int    `msgpack:"v"`
	Seq     uint64 `msgpack:"seq"`
}

// commitTable is Branch.Commits in a compact msgpack form: an array
// [count, records], records being one bin value holding, per commit,
// uvarint(len(id)) id uvarint(seq). It is written oldest first, without
// reflection and without intermediate allocations, and read into the
// records, one string holding every id (each id is a substring of it), a
// list of count commits and the commits' own blocks. A msgpack map
// (version 1) is read too. The order of the records is not part of the
// format: earlier versions wrote them in any order.
//
// ops.Commits is embedded so that its IsZero tells msgpack's omitempty
// when the table is empty.
type commitTable struct{ history.Commits }

// maxCommitTable bounds the count a commit table may declare, so that a
// corrupt snapshot cannot make the decoder allocate a huge list. It is far
// above history.MaxRememberedCommits.
const maxCommitTable = 1 << 16

// EncodeMsgpack writes the table.
func (t commitTable) EncodeMsgpack(enc *msgpack.Encoder) error {
	size := 0
	for id, seq := range t.All() {
		size += uvarintLen(uint64(len(id))) + len(id) + uvarintLen(seq)
	}
	if err := enc.EncodeArrayLen(2); err != nil {
		return err
	}
	if err := enc.EncodeInt(int64(t.Len())); err != nil {
		return err
	}
	if err := enc.EncodeBytesLen(size); err != nil {
		return err
	}
	w := enc.Writer()
	var scratch [binary.MaxVarintLen64]byte
	for id, seq := range t.All() {
		if _, err := w.Write(binary.AppendUvarint(scratch[:0], uint64(len(id)))); err != nil {
			return err
		}
		if _, err := io.WriteString(w, id); err != nil {
			return err
		}
		if _, err := w.Write(binary.AppendUvarint(scratch[:0], seq)); err != nil {
			return err
		}
	}
	return nil
}

// DecodeMsgpack reads a table written by EncodeMsgpack, or a msgpack map of
// request ids to sequences.
func (t *commitTable) DecodeMsgpack(dec *msgpack.Decoder) error {
	code, err := dec.PeekCode()
	if err != nil {
		return err
	}
	if code == 0xc0 { // nil
		*t = commitTable{}
		return dec.Skip()
	}
	if isMapCode(code) {
		var m map[string]uint64
		if err := dec.Decode(&m); err != nil {
			return err
		}
		*t = commitTable{history.CommitsFromMap(m)}
		return nil
	}
	if n, err := dec.DecodeArrayLen(); err != nil || n != 2 {
		return fmt.Errorf("commit table: want an array [count, records]: %d elements, %w", n, err)
	}
	count, err := dec.DecodeInt()
	if err != nil {
		return fmt.Errorf("commit table count: %w", err)
	}
	if count < 0 || count > maxCommitTable {
		return fmt.Errorf("commit table count %d out of range", count)
	}
	raw, err := dec.DecodeBytes()
	if err != nil {
		return fmt.Errorf("commit table records: %w", err)
	}
	ids := string(raw) // every id is a substring of this one string
	list := make([]history.Commit, 0, count)
	for i := 0; i < count; i++ {
		n, k := binary.Uvarint(raw)
		if k <= 0 || n > uint64(len(raw)-k) {
			return errors.New("commit table: truncated record")
		}
		off := len(ids) - len(raw) + k
		id := ids[off : off+int(n)]
		raw = raw[k+int(n):]
		seq, k := binary.Uvarint(raw)
		if k <= 0 {
			return errors.New("commit table: truncated record")
		}
		raw = raw[k:]
		list = append(list, history.Commit{ID: id, Seq: seq})
	}
	if len(raw) != 0 {
		return fmt.Errorf("commit table: %d records declared, %d bytes left", count, len(raw))
	}
	c := history.NewCommits(list)
	if c.Len() != min(count, history.MaxRememberedCommits) { // a repeated id
		return fmt.Errorf("commit table: %d records declared, %d distinct kept", count, c.Len())
	}
	*t = commitTable{c}
	return nil
}

func isMapCode(c byte) bool {
	return c&0xf0 == 0x80 || c == 0xde || c == 0xdf // fixmap, map16, map32
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// encodeSnapshot encodes b as a snapshot whose first messages are in segs
// (holding covered messages in all). The returned bytes are valid until
// release is called; call it once they have been published.
func encodeSnapshot(b *history.Branch, segs []segment, covered int) (data []byte, release func(), err error) {
	buf, release := bufpool.Get()
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	body := *b // shallow: the segments' messages are left out
	body.Messages = b.Messages[covered:]
	snap := &snapshot{Version: snapshotVersion, Seq: b.Seq, Branch: &body, Commits: commitTable{b.Commits}, Segments: segs, Total: len(b.Messages)}
	if err := enc.Encode(snap); err != nil {
		release()
		return nil, func() {}, err
	}
	return buf.Bytes(), release, nil
}

// decodeSnapshot decodes a snapshot of any version and checks it. For
// version 3, the branch holds only the messages after the segments.
func decodeSnapshot(data []byte) (*snapshot, error) {
	var snap snapshot
	if err := newDecoder(data).Decode(&snap); err != nil {
		return nil, fmt.Errorf("decode branch snapshot: %w", err)
	}
	switch snap.Version {
	case snapshotVersion, snapshotVersionTable:
	case snapshotVersionMap:
		// The commits are inside the branch, where its decoding skips
		// them: read them on their own.
		var v1 struct {
			Branch struct {
				Commits commitTable `msgpack:"commits"`
			} `msgpack:"branch"`
		}
		if err := newDecoder(data).Decode(&v1); err != nil {
			return nil, fmt.Errorf("decode branch snapshot commits: %w", err)
		}
		snap.Commits = v1.Branch.Commits
	default:
		return nil, fmt.Errorf("branch snapshot version %d, want %d to %d", snap.Version, snapshotVersionMap, snapshotVersion)
	}
	if snap.Branch != nil {
		snap.Branch.Commits = snap.Commits.Commits
	}
	snap.Commits = commitTable{}
	if snap.Branch == nil || snap.Branch.Seq != snap.Seq || snap.Seq == 0 {
		return nil, errors.New("branch snapshot is inconsistent")
	}
	if snap.Version != snapshotVersion && (len(snap.Segments) > 0 || snap.Total != 0) {
		return nil, fmt.Errorf("branch snapshot version %d has segments", snap.Version)
	}
	inSegments := 0
	for _, s := range snap.Segments {
		if s.Count <= 0 || s.Key == "" {
			return nil, errors.New("branch snapshot lists an empty segment")
		}
		inSegments += s.Count
	}
	if snap.Version == snapshotVersion && inSegments+len(snap.Branch.Messages) != snap.Total {
		return nil, fmt.Errorf("branch snapshot counts %d messages, holds %d and lists %d in segments", snap.Total, len(snap.Branch.Messages), inSegments)
	}
	b := snap.Branch
	b.CreatedAt, b.UpdatedAt = b.CreatedAt.UTC(), b.UpdatedAt.UTC()
	normalizeMessageTimes(b.Messages)
	if b.Messages == nil {
		b.Messages = []history.Message{}
	}
	return &snap, nil
}

// snapshotSeq returns the sequence a snapshot reflects without decoding its
// branch.
func snapshotSeq(data []byte) (uint64, error) {
	var head snapshotHead
	if err := newDecoder(data).Decode(&head); err != nil {
		return 0, fmt.Errorf("decode branch snapshot: %w", err)
	}
	if head.Version < snapshotVersionMap || head.Version > snapshotVersion {
		return 0, fmt.Errorf("branch snapshot version %d", head.Version)
	}
	return head.Seq, nil
}

// decodeSegment decodes a segment that must hold want messages.
func decodeSegment(data []byte, want int) ([]history.Message, error) {
	var msgs []history.Message
	if err := newDecoder(data).Decode(&msgs); err != nil {
		return nil, fmt.Errorf("decode snapshot segment: %w", err)
	}
	if len(msgs) != want {
		return nil, fmt.Errorf("snapshot segment holds %d messages, want %d", len(msgs), want)
	}
	normalizeMessageTimes(msgs)
	return msgs, nil
}

func normalizeMessageTimes(msgs []history.Message) {
	for i := range msgs {
		msgs[i].CreatedAt = msgs[i].CreatedAt.UTC()
	}
}
