package wire

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultBudgetWindow is the window of a [BudgetLimits] that sets none:
// limits are per minute, as providers state them.
const DefaultBudgetWindow = time.Minute

// Sentinel errors of the budgets bucket's values and keys.
var (
	// ErrInvalidBudgetLimits means a BudgetLimits value has a negative
	// field.
	ErrInvalidBudgetLimits = errors.New("budget: invalid limits")
	// ErrBadBudgetKey means a budgets bucket key is not a budget key.
	ErrBadBudgetKey = errors.New("budget: not a budget key")
)

// BudgetLimits is the budget of one model reference (such as
// "openai:gpt-4.1-mini") or provider key: at most Requests calls and Tokens
// tokens (input + output) admitted in any window of Window, and at most
// InFlight calls at once, over the whole fleet. A zero field is no limit of
// that kind; the zero BudgetLimits admits everything.
type BudgetLimits struct {
	// Requests is the calls admitted per window; 0 is unlimited.
	Requests int `json:"requests,omitempty"`
	// Tokens is the tokens (input + output) admitted per window; 0 is
	// unlimited.
	Tokens int `json:"tokens,omitempty"`
	// InFlight is the calls running at once; 0 is unlimited.
	InFlight int `json:"in_flight,omitempty"`
	// WindowMS is the window in milliseconds; 0 means
	// DefaultBudgetWindow.
	WindowMS int64 `json:"window_ms,omitempty"`
}

// Window returns the window, DefaultBudgetWindow when WindowMS is 0.
func (l BudgetLimits) Window() time.Duration {
	if l.WindowMS <= 0 {
		return DefaultBudgetWindow
	}
	return time.Duration(l.WindowMS) * time.Millisecond
}

// Validate returns an error wrapping ErrInvalidBudgetLimits for a negative
// field.
func (l BudgetLimits) Validate() error {
	if l.Requests < 0 || l.Tokens < 0 || l.InFlight < 0 || l.WindowMS < 0 {
		return fmt.Errorf("%w: %+v has a negative field", ErrInvalidBudgetLimits, l)
	}
	return nil
}

// BudgetEntry is the JSON value of one budget in the budgets bucket
// (<prefix>_budgets), under the key [BudgetKey] of Key.
type BudgetEntry struct {
	// Key is the model reference ("openai:gpt-4.1-mini") or provider key
	// the limits apply to.
	Key string `json:"key"`
	// Limits are the fleet's limits for Key.
	Limits BudgetLimits `json:"limits"`
}

// budgetKeyPrefix starts every key of the budgets bucket: "m." then the
// model reference in unpadded base64url, since a model reference holds
// characters (":") a KV key cannot.
const budgetKeyPrefix = "m."

// BudgetKey returns the budgets bucket key of a model reference.
func BudgetKey(ref string) string {
	return budgetKeyPrefix + base64.RawURLEncoding.EncodeToString([]byte(ref))
}

// BudgetRef returns the model reference of a budgets bucket key, or an
// error wrapping ErrBadBudgetKey.
func BudgetRef(key string) (string, error) {
	enc, ok := strings.CutPrefix(key, budgetKeyPrefix)
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrBadBudgetKey, key)
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(b) == 0 {
		return "", fmt.Errorf("%w: %q", ErrBadBudgetKey, key)
	}
	return string(b), nil
}
