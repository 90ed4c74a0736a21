package main

import (
	"context"
	"fmt"
	"io"
)

// runLNDLCommand runs `publisher lndl ...`. The LNDL command lands in
// lndl.go; until then this build reports it as unavailable.
func runLNDLCommand(_ context.Context, _ []string, _ io.Reader, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "publisher: the lndl command is not part of this build yet")
	return exitUsage
}
