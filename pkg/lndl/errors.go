package lndl

import (
	"errors"
	"fmt"
	"strings"
)

// ErrLNDL is the base of every error this package returns:
// errors.Is(err, ErrLNDL) is true for all of them.
var ErrLNDL = errors.New("lndl")

// ParseError reports text that does not lex or parse. Line counts from 1;
// Column counts characters from 1 on the first line and from 0 on later
// lines (the convention of the reference implementation that the
// conformance vectors pin).
type ParseError struct {
	Line   int
	Column int
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("Parse error at line %d, column %d: %s", e.Line, e.Column, e.Reason)
}

// Is reports whether target is ErrLNDL.
func (e *ParseError) Is(target error) bool { return target == ErrLNDL }

// MissingLvarError reports an OUT reference to an alias that nothing declares.
type MissingLvarError struct {
	Alias string
}

func (e *MissingLvarError) Error() string {
	return fmt.Sprintf("OUT{} references undeclared alias '%s'", e.Alias)
}

// Is reports whether target is ErrLNDL.
func (e *MissingLvarError) Is(target error) bool { return target == ErrLNDL }

// MissingFieldError reports required target fields absent from OUT.
// Fields are sorted.
type MissingFieldError struct {
	Fields []string
}

func (e *MissingFieldError) Error() string {
	return "OUT{} is missing required field(s): " + strings.Join(e.Fields, ", ")
}

// Is reports whether target is ErrLNDL.
func (e *MissingFieldError) Is(target error) bool { return target == ErrLNDL }

// TypeMismatchError reports an alias declared for one model used in a field
// whose type is another model.
type TypeMismatchError struct {
	Alias    string
	Declared string
	Expected string
}

func (e *TypeMismatchError) Error() string {
	return fmt.Sprintf("alias '%s' declares model '%s', but the target spec expects '%s'", e.Alias, e.Declared, e.Expected)
}

// Is reports whether target is ErrLNDL.
func (e *TypeMismatchError) Is(target error) bool { return target == ErrLNDL }

// InvalidConstructorError reports a lact body that is not a valid call.
// Err, when set, is the underlying reason.
type InvalidConstructorError struct {
	Alias string
	Body  string
	Err   error
}

func (e *InvalidConstructorError) Error() string {
	msg := fmt.Sprintf("lact '%s' body is not a parseable function call: '%s'", e.Alias, e.Body)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is ErrLNDL.
func (e *InvalidConstructorError) Is(target error) bool { return target == ErrLNDL }

// Unwrap returns the underlying reason.
func (e *InvalidConstructorError) Unwrap() error { return e.Err }
