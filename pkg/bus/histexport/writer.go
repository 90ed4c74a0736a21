package histexport

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Writer writes a branch's history as a file of this format: the header
// when it is made, a line per [Writer.Write], the end line at
// [Writer.Close]. It does not buffer: give it a bufio.Writer for many
// small writes. A Writer is not safe for concurrent use.
type Writer struct {
	w      io.Writer
	branch string
	prev   [sha256.Size]byte
	events int
	last   uint64
	err    error // the first error, returned by every later call
}

// NewWriter writes the header h to w and returns the Writer of the rest.
// h.Format is set to [Format]; h.ExportedAt, when zero, to the time now.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	if h.BranchID == "" {
		return nil, errors.New("histexport: the header needs a branch id")
	}
	h.Format = Format
	if h.ExportedAt.IsZero() {
		h.ExportedAt = time.Now().UTC()
	}
	wr := &Writer{w: w, branch: h.BranchID}
	at := h.ExportedAt
	if err := wr.put(TypeHeader, h.BranchID+"/export", &at, 0, h); err != nil {
		return nil, err
	}
	return wr, nil
}

// Write writes the line of ev, the next event of the branch's history:
// the first must be a branch.created or, when retention dropped the
// history before it, a branch.compacted (which holds the branch's state
// there); each one's Seq above the last's, and ev.BranchID, when set,
// the header's branch.
func (w *Writer) Write(ev wire.Event) error {
	if w.err != nil {
		return w.err
	}
	switch {
	case ev.Seq <= w.last:
		return fmt.Errorf("%w: event seq %d after seq %d", ErrOrder, ev.Seq, w.last)
	case w.events == 0 && !startsHistory(Format, ev.Type):
		return fmt.Errorf("%w: %s as the first event (%s starts with a %s)", ErrOrder, ev.Type, Format, startName(Format))
	case w.events > 0 && ev.Type == wire.EventCreated:
		return fmt.Errorf("%w: %s as event %d (only the first event may start the history)", ErrOrder, ev.Type, w.events+1)
	case ev.Type == wire.EventCompacted && ev.Compaction == nil:
		return fmt.Errorf("%w: a %s without its compaction", ErrMalformed, ev.Type)
	case ev.BranchID != "" && ev.BranchID != w.branch:
		return fmt.Errorf("%w: an event of branch %q in the export of %q", ErrOrder, ev.BranchID, w.branch)
	}
	at := ev.Time
	if err := w.put(eventType(ev.Type), w.branch+"/"+strconv.FormatUint(ev.Seq, 10), &at, ev.Seq, ev); err != nil {
		return err
	}
	w.events++
	w.last = ev.Seq
	return nil
}

// Close writes the end line. It does not close the underlying writer.
// A file without its end line is reported by [Reader] as truncated.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if err := w.put(TypeEnd, w.branch+"/end", nil, 0, End{Events: w.events, LastSeq: w.last}); err != nil {
		return err
	}
	w.err = errors.New("histexport: write after Close")
	return nil
}

// put writes one line.
func (w *Writer) put(typ, id string, at *time.Time, seq uint64, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		w.err = fmt.Errorf("histexport: encode %s: %w", typ, err)
		return w.err
	}
	canon, err := json.Marshal(cloudEvent{
		SpecVersion: "1.0", ID: id, Source: source(w.branch), Type: typ, Subject: w.branch,
		Time: at, DataContentType: "application/json", LionSeq: seq, Data: raw,
	})
	if err != nil {
		w.err = fmt.Errorf("histexport: encode %s: %w", typ, err)
		return w.err
	}
	sum := chain(w.prev, canon)
	out := append(line(sum, canon), '\n')
	if len(out) > MaxLineBytes {
		w.err = fmt.Errorf("%w: the %s line is %d bytes, more than %d", ErrLineTooLong, typ, len(out), MaxLineBytes)
		return w.err
	}
	if _, err := w.w.Write(out); err != nil {
		w.err = fmt.Errorf("histexport: write: %w", err)
		return w.err
	}
	w.prev = sum
	return nil
}
