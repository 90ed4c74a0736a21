package histexport

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Format names the version of the format this package writes. The
// header's data.format holds it. Version 2 lets a file start with a
// branch.compacted (the export of a branch whose older history retention
// dropped); a file of version 1 ([FormatV1]) starts with a
// branch.created. A reader reads both and refuses other versions.
const Format = "lionbus.history/2"

// FormatV1 is the first version of the format, which [Reader] still reads:
// the same lines, the first event always a branch.created.
const FormatV1 = "lionbus.history/1"

// startsHistory says whether an event of type t may be the first of a file
// of version format: a branch.created, or in version 2 also a
// branch.compacted (the state at the point retention cut the history).
func startsHistory(format string, t wire.EventType) bool {
	return t == wire.EventCreated || (t == wire.EventCompacted && format != FormatV1)
}

// CloudEvent types of the lines of a file. An event line's type is
// "lionbus." followed by the history event's type (lionbus.branch.created,
// lionbus.branch.messages, lionbus.branch.compacted, ...).
const (
	TypeHeader = "lionbus.history.export"
	TypeEnd    = "lionbus.history.end"
	typeEvent  = "lionbus."
)

// MaxLineBytes bounds a line of a file, newline included. A history event
// is at most the server's max_payload (1 MiB by default) of msgpack; its
// JSON line may be a few times that.
const MaxLineBytes = 16 << 20

// hashPrefix starts every line; the hash's 64 hex digits and `",` follow.
const hashPrefix = `{"lionhash":"`

// hashedPrefixLen is the length of a line's hash member: hashPrefix, 64
// hex digits and `",`.
const hashedPrefixLen = len(hashPrefix) + 2*sha256.Size + 2

// Header is the data of a file's first line.
type Header struct {
	// Format is the format version, [Format].
	Format string `json:"format"`
	// BranchID is the id of the exported branch.
	BranchID string `json:"branch_id"`
	// ExportedAt is when the export was written.
	ExportedAt time.Time `json:"exported_at"`
	// Exporter names what wrote the file (e.g. "publisher 1.2.0"); free-form.
	Exporter string `json:"exporter,omitempty"`
}

// End is the data of a file's last line.
type End struct {
	// Events is how many event lines the file holds.
	Events int `json:"events"`
	// LastSeq is the sequence of the last event.
	LastSeq uint64 `json:"last_seq"`
}

// cloudEvent is a line without its hash member: its canonical bytes.
type cloudEvent struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Subject         string          `json:"subject"`
	Time            *time.Time      `json:"time,omitempty"`
	DataContentType string          `json:"datacontenttype"`
	LionSeq         uint64          `json:"lionseq,omitempty"`
	Data            json.RawMessage `json:"data"`
}

// source is the CloudEvents source of every line of branch's file.
func source(branch string) string { return "/lionbus/history/" + branch }

// chain returns the hash of a line whose canonical bytes are canon, after
// a line whose hash is prev.
func chain(prev [sha256.Size]byte, canon []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(canon)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// line returns the line (without its newline) of canonical bytes canon
// hashed to sum.
func line(sum [sha256.Size]byte, canon []byte) []byte {
	out := make([]byte, 0, hashedPrefixLen+len(canon))
	out = append(out, hashPrefix...)
	out = hex.AppendEncode(out, sum[:])
	out = append(out, '"', ',')
	return append(out, canon[1:]...)
}

// eventType is the CloudEvents type of an event line of t.
func eventType(t wire.EventType) string { return typeEvent + string(t) }

// startName says what may start a file of version format.
func startName(format string) string {
	if format == FormatV1 {
		return string(wire.EventCreated)
	}
	return string(wire.EventCreated) + " or a " + string(wire.EventCompacted)
}
