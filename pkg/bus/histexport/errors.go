package histexport

import (
	"errors"
	"fmt"
)

// Errors of a [Reader], each wrapped in a [*LineError] that names the line.
var (
	// ErrMalformed: the line does not start with its hash member, or its
	// canonical bytes are not a CloudEvent of this format.
	ErrMalformed = errors.New("histexport: malformed line")
	// ErrHashMismatch: the line's hash is not the hash of its canonical
	// bytes chained to the line before: this line was edited, or a line
	// before it was dropped, inserted or moved.
	ErrHashMismatch = errors.New("histexport: hash does not chain")
	// ErrNotHeader: the first line is not a header.
	ErrNotHeader = errors.New("histexport: not a header line")
	// ErrUnsupportedFormat: the header names a format version this
	// package does not read.
	ErrUnsupportedFormat = errors.New("histexport: unsupported format version")
	// ErrOrder: an event that cannot follow the ones before it (its
	// sequence is not above theirs, a second branch.created, another
	// event before it, an event of another branch).
	ErrOrder = errors.New("histexport: event out of order")
	// ErrTruncated: the file ends before its end line.
	ErrTruncated = errors.New("histexport: file ends before its end line")
	// ErrTrailing: something follows the end line.
	ErrTrailing = errors.New("histexport: data after the end line")
	// ErrEndMismatch: the end line's count or last sequence is not what
	// the file holds.
	ErrEndMismatch = errors.New("histexport: end line does not match the events")
	// ErrLineTooLong: a line is longer than MaxLineBytes.
	ErrLineTooLong = errors.New("histexport: line too long")
)

// LineError is an error of a file at a line (from 1).
type LineError struct {
	// Line is the line the error is at, from 1.
	Line int
	// Err is the error, one of the sentinel errors of this package
	// wrapped with details.
	Err error
}

// Error says the line and what is wrong with it.
func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the error.
func (e *LineError) Unwrap() error { return e.Err }

func lineErr(line int, sentinel error, format string, args ...any) error {
	return &LineError{Line: line, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
