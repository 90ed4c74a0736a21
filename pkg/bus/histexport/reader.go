package histexport

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Reader reads a file of this format and checks it as it goes: every
// line's hash and place in the chain, the header, the order of the
// events, the end line and that nothing follows it. An error is a
// [*LineError] naming the line, wrapping one of this package's sentinel
// errors. A Reader is not safe for concurrent use.
//
// The events of a file are only known good once [Reader.Next] returned
// io.EOF: a consumer that must not act on a bad file reads it through
// once ([Verify]) before acting.
type Reader struct {
	r      *bufio.Reader
	header Header
	prev   [sha256.Size]byte
	line   int // the number of the last line read
	events int
	last   uint64
	done   bool
	err    error
}

// NewReader reads and checks the header of the file r.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{r: bufio.NewReaderSize(r, 64<<10)}
	ce, err := rd.read()
	if err != nil {
		return nil, err
	}
	if ce.Type != TypeHeader {
		return nil, lineErr(rd.line, ErrNotHeader, "type %q, want %q", ce.Type, TypeHeader)
	}
	var h Header
	if err := strictJSON(ce.Data, &h); err != nil {
		return nil, lineErr(rd.line, ErrMalformed, "header data: %v", err)
	}
	if h.Format != Format && h.Format != FormatV1 {
		return nil, lineErr(rd.line, ErrUnsupportedFormat, "%q (this reader reads %q and %q)", h.Format, Format, FormatV1)
	}
	if h.BranchID == "" || ce.Subject != h.BranchID {
		return nil, lineErr(rd.line, ErrMalformed, "header names branch %q, subject %q", h.BranchID, ce.Subject)
	}
	rd.header = h
	return rd, nil
}

// Header returns the file's header.
func (r *Reader) Header() Header { return r.header }

// Line returns the number of the last line read, from 1.
func (r *Reader) Line() int { return r.line }

// Next returns the next event. After the last it checks the end line and
// the end of the file and returns io.EOF; any other error is final.
func (r *Reader) Next() (wire.Event, error) {
	if r.err != nil {
		return wire.Event{}, r.err
	}
	ev, err := r.next()
	if err != nil {
		r.err = err
	}
	return ev, err
}

func (r *Reader) next() (wire.Event, error) {
	ce, err := r.read()
	if err != nil {
		return wire.Event{}, err
	}
	if ce.Subject != r.header.BranchID {
		return wire.Event{}, lineErr(r.line, ErrOrder, "a line of branch %q in the export of %q", ce.Subject, r.header.BranchID)
	}
	if ce.Type == TypeEnd {
		var end End
		if err := strictJSON(ce.Data, &end); err != nil {
			return wire.Event{}, lineErr(r.line, ErrMalformed, "end data: %v", err)
		}
		if end.Events != r.events || end.LastSeq != r.last {
			return wire.Event{}, lineErr(r.line, ErrEndMismatch, "it says %d events up to seq %d; the file holds %d up to seq %d", end.Events, end.LastSeq, r.events, r.last)
		}
		if _, err := r.r.Peek(1); err != io.EOF {
			if err == nil {
				return wire.Event{}, lineErr(r.line+1, ErrTrailing, "the end line is line %d", r.line)
			}
			return wire.Event{}, fmt.Errorf("histexport: read: %w", err)
		}
		r.done = true
		return wire.Event{}, io.EOF
	}
	t, ok := strings.CutPrefix(ce.Type, typeEvent)
	if !ok || ce.Type == TypeHeader {
		return wire.Event{}, lineErr(r.line, ErrMalformed, "type %q is not a history event's", ce.Type)
	}
	var ev wire.Event
	dec := json.NewDecoder(bytes.NewReader(ce.Data))
	dec.UseNumber() // numbers in content and metadata stay exactly as written
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return wire.Event{}, lineErr(r.line, ErrMalformed, "event data: %v", err)
	}
	switch {
	case string(ev.Type) != t:
		return wire.Event{}, lineErr(r.line, ErrMalformed, "type %q holds a %s event", ce.Type, ev.Type)
	case ev.Seq != ce.LionSeq:
		return wire.Event{}, lineErr(r.line, ErrMalformed, "lionseq %d holds the event of seq %d", ce.LionSeq, ev.Seq)
	case ev.Seq <= r.last:
		return wire.Event{}, lineErr(r.line, ErrOrder, "seq %d after seq %d", ev.Seq, r.last)
	case r.events == 0 && !startsHistory(r.header.Format, ev.Type):
		return wire.Event{}, lineErr(r.line, ErrOrder, "%s as the first event (%s starts with a %s)", ev.Type, r.header.Format, startName(r.header.Format))
	case r.events > 0 && ev.Type == wire.EventCreated:
		return wire.Event{}, lineErr(r.line, ErrOrder, "%s as event %d (only the first event may start the history)", ev.Type, r.events+1)
	case ev.Type == wire.EventCompacted && ev.Compaction == nil:
		return wire.Event{}, lineErr(r.line, ErrMalformed, "a %s without its compaction", ev.Type)
	case ev.BranchID != "" && ev.BranchID != r.header.BranchID:
		return wire.Event{}, lineErr(r.line, ErrOrder, "an event of branch %q in the export of %q", ev.BranchID, r.header.BranchID)
	}
	r.events++
	r.last = ev.Seq
	return ev, nil
}

// read reads the next line, checks its hash and place in the chain, and
// decodes its canonical bytes.
func (r *Reader) read() (*cloudEvent, error) {
	raw, err := r.readLine()
	if err != nil {
		return nil, err
	}
	if len(raw) < hashedPrefixLen+1 || !bytes.HasPrefix(raw, []byte(hashPrefix)) || string(raw[hashedPrefixLen-2:hashedPrefixLen]) != `",` {
		return nil, lineErr(r.line, ErrMalformed, "does not start with its hash member %s<64 hex digits>\",", hashPrefix)
	}
	var got [sha256.Size]byte
	digits := raw[len(hashPrefix) : hashedPrefixLen-2]
	if _, err := hex.Decode(got[:], digits); err != nil || !isLowerHex(digits) {
		return nil, lineErr(r.line, ErrMalformed, "the hash is not 64 lowercase hex digits")
	}
	canon := make([]byte, 0, len(raw)-hashedPrefixLen+1)
	canon = append(append(canon, '{'), raw[hashedPrefixLen:]...)
	if want := chain(r.prev, canon); want != got {
		return nil, lineErr(r.line, ErrHashMismatch, "the line was edited, or a line before it was dropped, inserted or moved")
	}
	var ce cloudEvent
	if err := strictJSON(canon, &ce); err != nil {
		return nil, lineErr(r.line, ErrMalformed, "not a CloudEvent of this format: %v", err)
	}
	if ce.SpecVersion != "1.0" || ce.DataContentType != "application/json" || ce.ID == "" || ce.Source != source(ce.Subject) {
		return nil, lineErr(r.line, ErrMalformed, "specversion %q, datacontenttype %q, id %q, source %q: want 1.0, application/json, an id and %s", ce.SpecVersion, ce.DataContentType, ce.ID, ce.Source, source(ce.Subject))
	}
	r.prev = got
	return &ce, nil
}

// readLine returns the next line without its newline. Every line,
// the last included, ends with one.
func (r *Reader) readLine() ([]byte, error) {
	r.line++
	var buf []byte
	for {
		part, err := r.r.ReadSlice('\n')
		if len(buf)+len(part) > MaxLineBytes {
			return nil, lineErr(r.line, ErrLineTooLong, "more than %d bytes", MaxLineBytes)
		}
		buf = append(buf, part...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(buf) == 0:
			return nil, lineErr(r.line, ErrTruncated, "no end line")
		case err == io.EOF:
			return nil, lineErr(r.line, ErrTruncated, "the last line has no newline")
		default:
			return nil, fmt.Errorf("histexport: read line %d: %w", r.line, err)
		}
	}
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// strictJSON decodes one JSON value into v, refusing unknown fields and
// anything after the value.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

// Summary is what [Verify] found in a good file.
type Summary struct {
	// Header is the file's header.
	Header Header
	// Events is the number of events; FirstSeq and LastSeq their first
	// and last sequence.
	Events            int
	FirstSeq, LastSeq uint64
	// Lines is the number of lines, header and end line included.
	Lines int
	// Head is the hash of the end line, in hex: it names the whole file.
	Head string
}

// Verify reads the file r through and checks it (see [Reader]). It
// returns the file's summary, or the first error, a [*LineError] naming
// the line.
func Verify(r io.Reader) (*Summary, error) {
	rd, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	s := &Summary{Header: rd.Header()}
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if s.Events == 0 {
			s.FirstSeq = ev.Seq
		}
		s.Events++
		s.LastSeq = ev.Seq
	}
	s.Lines = rd.line
	s.Head = hex.EncodeToString(rd.prev[:])
	return s, nil
}
