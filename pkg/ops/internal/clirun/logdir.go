package clirun

import (
	"errors"
	"fmt"

	"github.com/lionbus/lionbus/pkg/wire"
)

// The run log directory: where a run with stream_persist keeps its log
// is one name, a subject token on the bus.
const (
	// DefaultLogDir is the directory of an engine configured with none.
	DefaultLogDir = "default"
	// MaxLogDirLength bounds a run log directory.
	MaxLogDirLength = 64
	// LogDirRule says the rule in words, for error messages.
	LogDirRule = "1 to 64 characters of [A-Za-z0-9_-]"
)

// ErrInvalidLogDir is wrapped by the errors about a run log directory
// that breaks the rule ([ValidLogDir]).
var ErrInvalidLogDir = errors.New("ops: invalid run log directory")

// ValidLogDir reports whether s is a usable run log directory: 1 to
// MaxLogDirLength characters of [A-Za-z0-9_-], a single subject token.
func ValidLogDir(s string) bool { return len(s) <= MaxLogDirLength && wire.ValidID(s) }

// CheckLogDirField returns the CodeInvalidRequest error, wrapping
// ErrInvalidLogDir, of a request's run log directory dir (the request
// field named field) that breaks the rule or comes without persist; nil
// when it is usable.
func CheckLogDirField(field string, persist bool, dir string) error {
	bad := func(format string, args ...any) error {
		return &wire.Error{Code: wire.CodeInvalidRequest, Message: fmt.Sprintf(format, args...), Err: ErrInvalidLogDir}
	}
	switch {
	case !persist:
		return bad("%s names where a persisted run keeps its log; it needs \"stream_persist\": true", field)
	case dir == "":
		return bad("%s is empty; leave it out for the worker's run log directory", field)
	case len(dir) > MaxLogDirLength:
		return bad("%s is %d characters long; a run log directory is %s", field, len(dir), LogDirRule)
	case !ValidLogDir(dir):
		return bad("%s %q is not a run log directory: %s (one subject token)", field, wire.Truncate(dir, MaxLogDirLength), LogDirRule)
	}
	return nil
}

// LogDir returns the directory a run keeps its log in: "" when persist
// is false (nothing is kept), else dir, or def (the engine's default) when
// dir is nil. A dir that breaks the rule, or one given without persist,
// is refused ([CheckLogDirField]).
func LogDir(field string, persist bool, dir *string, def string) (string, error) {
	if dir == nil {
		if !persist {
			return "", nil
		}
		return def, nil
	}
	if err := CheckLogDirField(field, persist, *dir); err != nil {
		return "", err
	}
	return *dir, nil
}
