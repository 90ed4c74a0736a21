package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/wire"
)

// changesLong describes changes in its help.
const changesLong = `Print the change feed: every committed history event of every branch, in
commit order, one CloudEvent (JSON) a line, whose lionseq is its sequence
(docs/history.md, "The change feed"). Resume after a sequence with --after;
--follow goes on with new changes until interrupted. A projection in any
language can read these lines.`

// changes is `publisher changes`.
func (a *app) changes(fs *flag.FlagSet) func([]string) int {
	after := fs.Uint64("after", 0, "start after this sequence (a change's lionseq)")
	follow := fs.Bool("follow", false, "go on with new changes until interrupted")
	return func(args []string) int {
		if len(args) != 0 {
			return usageError(a.stderr, fmt.Errorf("changes takes no argument, got %q", args))
		}
		// --timeout bounds connecting only: reading lasts as long as it takes.
		cctx, cancel := context.WithTimeout(a.ctx, a.o.Timeout)
		cl, nc, code := connect(cctx, a.o, a.stderr)
		cancel()
		if cl == nil {
			return code
		}
		defer nc.Close()
		w := bufio.NewWriter(a.stdout)
		err := cl.Changes(a.ctx, client.ChangesOptions{After: *after, Follow: *follow}, func(c wire.Change) error {
			b, err := json.Marshal(c)
			if err != nil {
				return err
			}
			b = append(b, '\n')
			if _, err := w.Write(b); err != nil {
				return err
			}
			if *follow {
				return w.Flush()
			}
			return nil
		})
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		if err != nil && !(*follow && errors.Is(err, context.Canceled)) {
			fmt.Fprintf(a.stderr, "publisher: changes: %v\n", err)
			return exitNoAnswer
		}
		return exitOK
	}
}
