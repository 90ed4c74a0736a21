package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/histexport"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// historyLong describes branch export, verify and import in their help.
const historyLong = `A branch's history moves between clusters, and is archived, as an export:
JSON lines, one CloudEvent per history event between a header naming the
format version (` + histexport.Format + `) and an end line, each line carrying a
SHA-256 hash chained to the line before (docs/history.md).

  export BRANCH   write the branch's history (--out FILE, default stdout)
  verify FILE     check an export; names the first bad line (edited, dropped,
                  repeated or reordered); FILE - is standard input
  import FILE     verify FILE, then rebuild the branch from it through
                  branch.import requests, as --id or the export's branch id

An export or import of a long history may need a --timeout above the default.`

// branchExport is `publisher branch export BRANCH`.
func (a *app) branchExport(fs *flag.FlagSet) func([]string) int {
	out := fs.String("out", "-", "file to write (- for standard output); written whole or not at all")
	return func(args []string) int {
		if len(args) != 1 || !protocol.ValidToken(args[0]) {
			return usageError(a.stderr, fmt.Errorf("branch export takes one branch id, got %q", args))
		}
		return withClient(a.ctx, a.o, a.stderr, func(ctx context.Context, cl *client.Client) int {
			n, err := exportTo(ctx, cl, args[0], *out, a.stdout)
			if err != nil {
				fmt.Fprintf(a.stderr, "publisher: branch export %s: %v\n", args[0], err)
				var re *client.RemoteError
				if errors.As(err, &re) {
					return exitFailed
				}
				return exitNoAnswer
			}
			if *out != "-" {
				fmt.Fprintf(a.stdout, "exported %d events of branch %s to %s\n", n, args[0], *out)
			}
			return exitOK
		})
	}
}

// exportTo writes the export of branch to path (- for stdout): into a
// temporary file renamed at the end, so that a failed export leaves no
// file.
func exportTo(ctx context.Context, cl *client.Client, branch, path string, stdout io.Writer) (int, error) {
	if path == "-" {
		w := bufio.NewWriter(stdout)
		n, err := cl.ExportBranch(ctx, branch, w, "publisher "+versionString())
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		return n, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".export-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	w := bufio.NewWriter(f)
	n, err := cl.ExportBranch(ctx, branch, w, "publisher "+versionString())
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	return n, err
}

// verifySummary is what branch verify --json prints.
type verifySummary struct {
	File     string `json:"file"`
	Format   string `json:"format"`
	BranchID string `json:"branch_id"`
	Events   int    `json:"events"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	Lines    int    `json:"lines"`
	Head     string `json:"head"`
}

// branchVerify is `publisher branch verify FILE`. It needs no server.
func (a *app) branchVerify(*flag.FlagSet) func([]string) int {
	return func(args []string) int {
		if len(args) != 1 {
			return usageError(a.stderr, fmt.Errorf("branch verify takes one file, got %q", args))
		}
		s, err := verifyFile(args[0], a.stdin)
		if err != nil {
			fmt.Fprintf(a.stderr, "publisher: branch verify %s: %v\n", args[0], err)
			return exitFailed
		}
		if a.o.JSON {
			b, _ := json.MarshalIndent(verifySummary{args[0], s.Header.Format, s.Header.BranchID, s.Events, s.FirstSeq, s.LastSeq, s.Lines, s.Head}, "", "  ")
			fmt.Fprintln(a.stdout, string(b))
			return exitOK
		}
		fmt.Fprintf(a.stdout, "%s: good: %s export of branch %s, %d events (seq %d to %d), %d lines, head %s\n",
			args[0], s.Header.Format, s.Header.BranchID, s.Events, s.FirstSeq, s.LastSeq, s.Lines, s.Head)
		return exitOK
	}
}

// verifyFile verifies the export at path (- for stdin).
func verifyFile(path string, stdin io.Reader) (*histexport.Summary, error) {
	if path == "-" {
		return histexport.Verify(stdin)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return histexport.Verify(f)
}

// branchImport is `publisher branch import FILE`.
func (a *app) branchImport(fs *flag.FlagSet) func([]string) int {
	id := fs.String("id", "", "id of the rebuilt branch (default: the exported branch's id)")
	pageBytes := fs.Int("page-bytes", client.DefaultImportPageBytes, "most bytes of events in one branch.import request (below the workers' request limit)")
	return func(args []string) int {
		if len(args) != 1 || args[0] == "-" {
			return usageError(a.stderr, fmt.Errorf("branch import takes one file (not standard input: it is read twice), got %q", args))
		}
		if *id != "" && !protocol.ValidToken(*id) {
			return usageError(a.stderr, fmt.Errorf("--id %q is not a valid branch id", *id))
		}
		if *pageBytes <= 0 {
			return usageError(a.stderr, fmt.Errorf("--page-bytes must be positive, got %d", *pageBytes))
		}
		// Verify first: nothing is imported from a bad file.
		s, err := verifyFile(args[0], nil)
		if err != nil {
			fmt.Fprintf(a.stderr, "publisher: branch import %s: nothing imported: %v\n", args[0], err)
			return exitFailed
		}
		return withClient(a.ctx, a.o, a.stderr, func(ctx context.Context, cl *client.Client) int {
			f, err := os.Open(args[0])
			if err != nil {
				fmt.Fprintf(a.stderr, "publisher: branch import %s: %v\n", args[0], err)
				return exitFailed
			}
			defer f.Close()
			res, err := cl.ImportBranch(ctx, bufio.NewReader(f), *id, client.ImportOptions{PageBytes: *pageBytes})
			if err != nil {
				fmt.Fprintf(a.stderr, "publisher: branch import %s: %v\n", args[0], err)
				var re *client.RemoteError
				if errors.As(err, &re) || errors.Is(err, client.ErrImportEventTooLarge) || errors.Is(err, wire.ErrBranchExists) {
					return exitFailed
				}
				return exitNoAnswer
			}
			if a.o.JSON {
				b, _ := json.MarshalIndent(res, "", "  ")
				fmt.Fprintln(a.stdout, string(b))
				return exitOK
			}
			fmt.Fprintf(a.stdout, "imported %d events of branch %s into branch %s (head seq %d)\n", s.Events, s.Header.BranchID, res.BranchID, res.Head)
			return exitOK
		})
	}
}

// editLong describes branch edit in its help.
const editLong = `Edit and resend: replace an exchange of BRANCH with another on a fork.
The fork (--id, default a new UUID) starts just before the exchange whose
instruction is message MESSAGE (its id, as branch get --json shows it), and
INSTRUCTION is sent on it with communicate; BRANCH is left as it was. The
answer is printed as communicate prints it; the fork's id goes to stderr.`

// branchEdit is `publisher branch edit BRANCH MESSAGE INSTRUCTION`.
func (a *app) branchEdit(fs *flag.FlagSet) func([]string) int {
	id := fs.String("id", "", "id of the fork (default a new UUID)")
	return func(args []string) int {
		if len(args) != 3 || !protocol.ValidToken(args[0]) {
			return usageError(a.stderr, fmt.Errorf("branch edit takes a branch id, a message id and the new instruction, got %q", args))
		}
		if *id != "" && !protocol.ValidToken(*id) {
			return usageError(a.stderr, fmt.Errorf("--id %q is not a valid branch id", *id))
		}
		return withClient(a.ctx, a.o, a.stderr, func(ctx context.Context, cl *client.Client) int {
			req := wire.CommunicateRequest{ChatRequest: wire.ChatRequest{Turn: wire.Turn{Prompt: wire.Prompt{Instruction: args[2]}}}}
			fork, res, err := cl.EditAndResend(ctx, args[0], args[1], *id, req)
			if fork != "" {
				fmt.Fprintf(a.stderr, "fork %s of branch %s\n", fork, args[0])
			}
			if err != nil {
				fmt.Fprintf(a.stderr, "publisher: branch edit %s: %v\n", args[0], err)
				var re *client.RemoteError
				if errors.As(err, &re) {
					return exitFailed
				}
				return exitNoAnswer
			}
			if a.o.JSON {
				b, _ := json.MarshalIndent(res, "", "  ")
				fmt.Fprintln(a.stdout, string(b))
				return exitOK
			}
			fmt.Fprintln(a.stdout, valueText(res.Value))
			return exitOK
		})
	}
}
