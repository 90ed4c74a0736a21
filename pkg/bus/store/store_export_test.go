package store

import (
	"bytes"
	"maps"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/vmihailenco/msgpack/v5"
)

// EncodeSnapshotForTest exposes the snapshot encoding to the external tests,
// which use it to plant stale snapshots.
func EncodeSnapshotForTest(b *history.Branch) ([]byte, error) {
	data, release, err := encodeSnapshot(b, nil, 0)
	if err != nil {
		return nil, err
	}
	defer release()
	return bytes.Clone(data), nil
}

// EncodeSnapshotV1ForTest encodes b as version 1 snapshots were: the
// commits inside the branch, as a msgpack map.
func EncodeSnapshotV1ForTest(b *history.Branch) ([]byte, error) {
	type branchV1 struct {
		history.Branch `msgpack:",inline"`
		Commits        map[string]uint64 `msgpack:"commits,omitempty"`
	}
	return msgpack.Marshal(&struct {
		Version int       `msgpack:"v"`
		Seq     uint64    `msgpack:"seq"`
		Branch  *branchV1 `msgpack:"branch"`
	}{snapshotVersionMap, b.Seq, &branchV1{*b, maps.Collect(b.Commits.All())}})
}

// DecodeSnapshotForTest exposes the snapshot decoding.
func DecodeSnapshotForTest(data []byte) (*history.Branch, error) {
	snap, err := decodeSnapshot(data)
	if err != nil {
		return nil, err
	}
	return snap.Branch, nil
}

// EncodeEventForTest exposes the history event encoding, which tests use to
// publish an event as an append whose acknowledgement was lost would have.
func EncodeEventForTest(ev history.Event) ([]byte, error) { return encodeEvent(ev) }
