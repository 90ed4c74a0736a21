package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// Log formats accepted by --log-format.
const (
	logFormatAuto    = "auto"
	logFormatJSON    = "json"
	logFormatConsole = "console"
)

// newLogger builds the process logger: zerolog JSON lines, or a
// human-friendly console writer. "auto" picks the console writer when w is
// a terminal and JSON otherwise (a log collector, a pipe, a file).
func newLogger(w io.Writer, format, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Nop(), fmt.Errorf("invalid --log-level %q (want trace, debug, info, warn, error or disabled)", level)
	}
	switch format {
	case logFormatAuto:
		if isTerminal(w) {
			w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
		}
	case logFormatConsole:
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w)}
	case logFormatJSON:
	default:
		return zerolog.Nop(), fmt.Errorf("invalid --log-format %q (want auto, json or console)", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}
