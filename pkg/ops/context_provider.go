package ops

import (
	"context"
	"encoding/json"
)

// ContextProvider is told what an operation's tools answered, so that it
// can remember it for later operations (a memory, a knowledge base): the
// writeback hook of ADR-0022 D4. Providers are configured in the engine
// (Config.ContextProviders).
type ContextProvider interface {
	// Writeback receives every non-null action response of an operate on
	// branchID — denials and suppressed tool errors included — before the
	// result is enriched with them. It is called at least once per
	// request: a redelivery answered from history calls it again with the
	// same requestID, by which a provider recognises a repeat. An error is
	// logged and changes nothing.
	Writeback(ctx context.Context, branchID, requestID string, responses []ActionResponse) error
}

// writeback offers the responses (raw, the act stage's value) to every
// context provider.
func (e *Engine) writeback(ctx context.Context, req Request, branchID string, raw json.RawMessage) {
	if len(e.contextProviders) == 0 {
		return
	}
	var responses []ActionResponse
	if err := json.Unmarshal(raw, &responses); err != nil {
		e.log.Warn().Err(err).Str("request_id", req.ID).Msg("action responses for the context providers")
		return
	}
	for _, p := range e.contextProviders {
		if err := p.Writeback(ctx, branchID, req.ID, responses); err != nil {
			e.log.Warn().Err(err).Str("request_id", req.ID).Msg("context provider writeback failed")
		}
	}
}
