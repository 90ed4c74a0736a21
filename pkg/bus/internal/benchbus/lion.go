package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// instruction is the data of every communicate the harness sends; the
// floor's requests carry the same bytes.
var instruction = []byte(`{"instruction":"Say hello in one short sentence."}`)

// operateData is the data of every operate the harness sends: the scripted
// echo model answers with the instruction, a JSON object that satisfies
// the response_format.
var operateData = []byte(`{"instruction":"{\"answer\": \"hello\"}","response_format":{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}}`)

// lionDo sends one lionbus request through the Go client and waits for a
// successful answer.
func (e *env) lionDo(ctx context.Context, verb, branch string, data any) (*ops.Result, error) {
	r, err := e.lionCl.Do(ctx, verb, branch, data)
	if err != nil {
		return nil, err
	}
	return r.Result()
}

// communicate sends one communicate to branch.
func (e *env) communicate(ctx context.Context, branch string) error {
	_, err := e.lionDo(ctx, "communicate", branch, json.RawMessage(instruction))
	return err
}

// createBranch creates branch id with the scripted echo model.
func (e *env) createBranch(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	defer cancel()
	_, err := e.lionDo(ctx, "branch.create", "", map[string]any{
		"branch_id": id, "system": "Be brief.", "chat_model": "scripted:echo",
	})
	if err != nil {
		return fmt.Errorf("create branch %s: %w", id, err)
	}
	return nil
}

// createBranches creates the branches ids, at most 16 at a time.
func (e *env) createBranches(ctx context.Context, ids []string) error {
	sem := make(chan struct{}, 16)
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = e.createBranch(ctx, id)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// history reads the whole history of branch through branch.history.
func (e *env) history(ctx context.Context, branch string) ([]history.Event, error) {
	var out []history.Event
	after := uint64(0)
	for {
		rctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
		res, err := e.lionDo(rctx, "branch.history", branch, map[string]any{"after": after, "limit": history.MaxHistoryPage})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", branch, err)
		}
		var page ops.HistoryPage
		if err := json.Unmarshal(res.Value, &page); err != nil {
			return nil, fmt.Errorf("history of %s: %w", branch, err)
		}
		out = append(out, page.Events...)
		if !page.More || len(page.Events) == 0 {
			return out, nil
		}
		after = page.Next
	}
}
