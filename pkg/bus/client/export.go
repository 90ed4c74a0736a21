package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lionbus/lionbus/pkg/bus/histexport"
	"github.com/lionbus/lionbus/pkg/wire"
)

// DefaultImportPageBytes bounds the events of one branch.import request
// (ImportOptions.PageBytes): half the default request limit of a worker
// (1 MiB), leaving room for the envelope.
const DefaultImportPageBytes = 512 << 10

// historyPage is the page size ExportBranch reads with.
const historyPage = 1000

// BranchImport appends a page of history events to the branch (verb
// branch.import); see [Client.ImportBranch] for a whole export.
func (c *Client) BranchImport(ctx context.Context, branchID string, req wire.BranchImportRequest, opts ...SubmitOption) (*wire.BranchImportResult, error) {
	return call[wire.BranchImportResult](ctx, c, wire.VerbBranchImport, branchID, req, opts)
}

// ExportBranch writes the whole history of branchID to w in the export
// format of package histexport (header, one line per event, end line),
// reading it through branch.history pages. exporter names the writer in
// the header. It returns the number of events written. Events appended
// while it reads are exported as far as its last page reached. The
// export of a fork is whole: its branch.created holds the fork's prefix
// instead of naming the parent (docs/history.md#forks), so that it
// imports anywhere to the same state.
func (c *Client) ExportBranch(ctx context.Context, branchID string, w io.Writer, exporter string, opts ...SubmitOption) (int, error) {
	first, err := c.historyExact(ctx, branchID, 0, opts)
	if err != nil {
		return 0, err
	}
	ew, err := histexport.NewWriter(w, histexport.Header{BranchID: branchID, Exporter: exporter})
	if err != nil {
		return 0, err
	}
	n := 0
	page := first.Value
	if len(page.Events) > 0 && page.Events[0].Type == wire.EventCreated && page.Events[0].Fork != nil {
		if page.Events[0], err = c.wholeFork(ctx, branchID, page.Events[0], opts); err != nil {
			return 0, err
		}
	}
	for {
		for _, ev := range page.Events {
			if err := ew.Write(ev); err != nil {
				return n, err
			}
			n++
		}
		if !page.More {
			break
		}
		next, err := c.historyExact(ctx, branchID, page.Next, opts)
		if err != nil {
			return n, err
		}
		page = next.Value
	}
	return n, ew.Close()
}

// wholeFork returns created, the branch.created of a fork, as an export
// writes it: holding the fork's prefix (its parent's messages at the
// fork point, read with branch.get at created's seq, a fork of a fork's
// whole chain) instead of naming the parent, so that the export imports
// anywhere to the same state. The fork's settings and model-call count
// are created's own already.
func (c *Client) wholeFork(ctx context.Context, branchID string, created wire.Event, opts []SubmitOption) (wire.Event, error) {
	reply, err := c.Do(ctx, wire.VerbBranchGet, branchID, wire.BranchGetRequest{AtSeq: created.Seq}, opts...)
	if err != nil {
		return created, err
	}
	if err := reply.Err(); err != nil {
		return created, err
	}
	var r struct {
		Value wire.Branch `json:"value"`
	}
	dec := json.NewDecoder(bytes.NewReader(reply.Data))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return created, fmt.Errorf("client: decode %s answer: %w", wire.VerbBranchGet, err)
	}
	if r.Value.Seq != created.Seq {
		return created, fmt.Errorf("client: export fork %s: its prefix read at seq %d answered seq %d", branchID, created.Seq, r.Value.Seq)
	}
	created.Messages = append(r.Value.Messages[:0:0], r.Value.Messages...)
	created.Fork = nil
	return created, nil
}

// historyExact reads a page of branch.history keeping every number of
// the events as the answer wrote it (json.Number), so that an export
// holds integers beyond float64's precision exactly.
func (c *Client) historyExact(ctx context.Context, branchID string, after uint64, opts []SubmitOption) (*wire.BranchHistoryResult, error) {
	reply, err := c.Do(ctx, wire.VerbBranchHistory, branchID, wire.BranchHistoryRequest{After: after, Limit: historyPage}, opts...)
	if err != nil {
		return nil, err
	}
	if err := reply.Err(); err != nil {
		return nil, err
	}
	var r wire.BranchHistoryResult
	dec := json.NewDecoder(bytes.NewReader(reply.Data))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("client: decode %s answer: %w", wire.VerbBranchHistory, err)
	}
	return &r, nil
}

// ImportOptions tune [Client.ImportBranch].
type ImportOptions struct {
	// PageBytes bounds the encoded events of one branch.import request;
	// an event larger than it cannot be imported
	// (ErrImportEventTooLarge). Default DefaultImportPageBytes.
	PageBytes int
}

// ErrImportEventTooLarge is returned by [Client.ImportBranch] for an event
// whose JSON alone exceeds the page bound.
var ErrImportEventTooLarge = errors.New("client: history event larger than an import request can carry")

// ImportBranch rebuilds, as branchID (the export's own branch id when
// empty), which must not exist (else an error matching
// wire.ErrBranchExists), the branch exported in file, through
// branch.import requests of
// at most [wire.MaxImportEvents] events and opt.PageBytes bytes. The
// file is checked as it is read (see [histexport.Reader]); since a bad
// line is only found when it is reached, verify the file first
// ([histexport.Verify]) to import nothing from a bad one. It returns the
// answer to the last page.
func (c *Client) ImportBranch(ctx context.Context, file io.Reader, branchID string, opt ImportOptions, opts ...SubmitOption) (*wire.BranchImported, error) {
	if opt.PageBytes <= 0 {
		opt.PageBytes = DefaultImportPageBytes
	}
	r, err := histexport.NewReader(file)
	if err != nil {
		return nil, err
	}
	if branchID == "" {
		branchID = r.Header().BranchID
	}
	// branch.import continues a first page the branch already holds (a
	// redelivery); an import from scratch wants a new branch.
	if _, err := c.BranchGet(ctx, branchID, opts...); err == nil {
		return nil, fmt.Errorf("%w: %q: import into a new branch id, or delete it first", wire.ErrBranchExists, branchID)
	} else if !errors.Is(err, wire.ErrBranchNotFound) {
		return nil, err
	}
	var (
		head  uint64
		page  []wire.Event
		size  int
		last  *wire.BranchImported
		lines []int // the file line of each event of page
	)
	flush := func() error {
		if len(page) == 0 {
			return nil
		}
		res, err := c.BranchImport(ctx, branchID, wire.BranchImportRequest{Events: page, Head: head}, opts...)
		if err != nil {
			return fmt.Errorf("import lines %d to %d: %w", lines[0], lines[len(lines)-1], err)
		}
		last = &res.Value
		head = res.Value.Head
		page, size, lines = page[:0], 0, lines[:0]
		return nil
	}
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return last, err
		}
		raw, err := json.Marshal(ev)
		if err != nil {
			return last, fmt.Errorf("line %d: %w", r.Line(), err)
		}
		if len(raw) > opt.PageBytes {
			return last, fmt.Errorf("line %d: %w: %d bytes, the bound is %d", r.Line(), ErrImportEventTooLarge, len(raw), opt.PageBytes)
		}
		if len(page) == wire.MaxImportEvents || size+len(raw) > opt.PageBytes {
			if err := flush(); err != nil {
				return last, err
			}
		}
		page = append(page, ev)
		lines = append(lines, r.Line())
		size += len(raw)
	}
	if err := flush(); err != nil {
		return last, err
	}
	if last == nil {
		return nil, errors.New("client: the export holds no event")
	}
	return last, nil
}
