package wire

import "time"

// The change feed: every committed history event of every branch, in the
// order they were committed, as the history stream (LION_HISTORY, subject
// <prefix>.history.<branch>) holds them; docs/history.md describes it.
const (
	// ChangeSource prefixes the CloudEvents source of a change: the
	// source of branch B's changes is ChangeSource + B.
	ChangeSource = "/lionbus/history/"
	// ChangeTypePrefix prefixes the CloudEvents type of a change: the
	// history event's type follows (lionbus.branch.messages, ...).
	ChangeTypePrefix = "lionbus."
)

// Change is one committed history event of a branch as the change feed
// gives it: a CloudEvent (JSON, structured mode) whose data is the
// [Event].
type Change struct {
	// SpecVersion is "1.0".
	SpecVersion string `json:"specversion"`
	// ID is "<branch>/<seq>": unique in a cluster.
	ID string `json:"id"`
	// Source is ChangeSource followed by the branch id.
	Source string `json:"source"`
	// Type is ChangeTypePrefix followed by the event's type.
	Type string `json:"type"`
	// Subject is the branch id.
	Subject string `json:"subject"`
	// Time is the event's time.
	Time time.Time `json:"time"`
	// DataContentType is "application/json".
	DataContentType string `json:"datacontenttype"`
	// LionSeq is the event's sequence: its position in the feed, to
	// resume after.
	LionSeq uint64 `json:"lionseq"`
	// Data is the event.
	Data Event `json:"data"`
}

// NewChange returns the change of ev, an event of branch at seq.
func NewChange(branch string, ev Event) Change {
	return Change{
		SpecVersion: "1.0", ID: branch + "/" + uitoa(ev.Seq), Source: ChangeSource + branch,
		Type: ChangeTypePrefix + string(ev.Type), Subject: branch, Time: ev.Time,
		DataContentType: "application/json", LionSeq: ev.Seq, Data: ev,
	}
}

func uitoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
