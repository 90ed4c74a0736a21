// Package outcome is the stored form of an operation's outcome: the
// result, or the failure, that an EventMessages records and a replay
// answers.
package outcome

import (
	"encoding/json"

	"github.com/lionbus/lionbus/pkg/ops/internal/decode"
	"github.com/lionbus/lionbus/pkg/wire"
)

// stored is the stored form of a recorded failure.
type stored struct {
	Error *struct {
		Code    wire.Code `json:"code"`
		Message string    `json:"message"`
	} `json:"error,omitempty"`
}

// Encode is the stored form of an operation's outcome, which an
// EventMessages records with its messages: res, or the failure operr.
func Encode(res *wire.Result, operr *wire.Error) (json.RawMessage, error) {
	if operr != nil {
		return decode.Value(map[string]any{"error": map[string]any{"code": operr.Code, "message": operr.Message}})
	}
	c := *res
	c.Replayed = false
	return decode.Value(c)
}

// Decode decodes the outcome an EventMessages recorded: a
// result (marked Replayed) or a recorded failure; a result without a branch id gets branchID.
func Decode(raw json.RawMessage, requestID, branchID string) (*wire.Result, error) {
	var ce stored
	if err := json.Unmarshal(raw, &ce); err == nil && ce.Error != nil {
		return nil, &wire.Error{Code: ce.Error.Code, Message: ce.Error.Message}
	}
	var res wire.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "committed result of request %q is unreadable: %v", requestID, err)
	}
	res.Replayed = true
	if res.BranchID == "" {
		res.BranchID = branchID
	}
	return &res, nil
}
