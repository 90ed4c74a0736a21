package wire

// EventDeleted is the last event of a deleted branch, its tombstone: who
// deleted it, when and by which request (Event.Tombstone). Reads of the
// branch answer branch_not_found from then on; the events before it stay
// in the history (and in the change feed) until they are purged.
const EventDeleted EventType = "branch.deleted"

// Tombstone is what a branch.deleted event records.
type Tombstone struct {
	// By and Reason are the branch.delete request's, free-form.
	By     string `json:"by,omitempty" msgpack:"by,omitempty"`
	Reason string `json:"reason,omitempty" msgpack:"reason,omitempty"`
	// Source is the branch.delete request's CloudEvents source: the
	// sender as it names itself, set by the transport, not by the
	// request's data (By is). Workers do not learn the NATS identity a
	// request was published under (JetStream does not pass it on).
	Source string `json:"source,omitempty" msgpack:"source,omitempty"`
	// Head is the sequence of the branch's last event before it.
	Head uint64 `json:"head" msgpack:"head"`
	// Purge is set when the delete purged the events before it.
	Purge bool `json:"purge,omitempty" msgpack:"purge,omitempty"`
}

// MaxTombstoneText bounds Tombstone.By and Tombstone.Reason, in bytes.
const MaxTombstoneText = 1024
