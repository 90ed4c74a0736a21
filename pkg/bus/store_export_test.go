package bus

// EncodeSnapshotForTest exposes the snapshot encoding to the external tests,
// which use it to plant stale snapshots.
var EncodeSnapshotForTest = encodeSnapshot
