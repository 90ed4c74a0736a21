package openai

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxErrorMessageLen bounds the provider's own error message (error.message
// of an error answer, or the start of a body that is not JSON) quoted in an
// error, in bytes; a longer one is cut and ends in "...".
const MaxErrorMessageLen = 512

// Sentinel errors. Every failure of [Provider.Complete] is an
// *ops.ProviderError whose chain holds one of them (match with errors.Is);
// an HTTP error answer is also a *[StatusError] (match with errors.As).
var (
	// ErrConfig means a [Config] cannot be used; [New] returns it wrapped.
	ErrConfig = errors.New("openai: invalid configuration")
	// ErrInvalidCall means the call cannot be sent: no model, no messages,
	// a message role or a model option the API does not take. Final.
	ErrInvalidCall = errors.New("openai: invalid call")
	// ErrRateLimited is an HTTP 429 answer. Temporary.
	ErrRateLimited = errors.New("openai: rate limited")
	// ErrServer is an HTTP 5xx answer. Temporary.
	ErrServer = errors.New("openai: server error")
	// ErrRefused is an HTTP 4xx answer other than 429: the API refused the
	// request (bad key, unknown model, invalid parameters). Final.
	ErrRefused = errors.New("openai: request refused")
	// ErrConnection means the request or its answer was lost on the way:
	// no connection, a connection reset, a body cut short. Temporary.
	ErrConnection = errors.New("openai: connection failed")
	// ErrTimeout means the call took longer than [Config.Timeout]. It
	// also matches context.DeadlineExceeded. Temporary.
	ErrTimeout = errors.New("openai: call timed out")
	// ErrResponseTooLarge means the answer's body exceeded
	// [Config.MaxResponseBytes]. Final.
	ErrResponseTooLarge = errors.New("openai: response too large")
	// ErrMalformedResponse means a successful answer was not a Chat
	// Completions response: not JSON, or fields of the wrong type. Final.
	ErrMalformedResponse = errors.New("openai: malformed response")
	// ErrNoChoices means a successful answer held no choice. Final.
	ErrNoChoices = errors.New("openai: response has no choices")
	// ErrToolArguments means a tool call's arguments were not a JSON
	// object encoded as a string. Final.
	ErrToolArguments = errors.New("openai: malformed tool call arguments")
)

// StatusError is an HTTP error answer of the API (any status outside 2xx).
// Its fields come from the answer's {"error": {"message", "type", "param",
// "code"}} body when it has one.
type StatusError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Message is the provider's error.message (or the start of a body that
	// is not JSON), cut to MaxErrorMessageLen bytes, with the API key
	// replaced by "[redacted]".
	Message string
	// Type, Param and Code are the error's type, param and code, when given.
	Type, Param, Code string
	// RetryAfter is the wait the answer asked for (Retry-After or
	// retry-after-ms); 0 when it asked for none.
	RetryAfter time.Duration
}

// Error returns the status and the provider's message.
func (e *StatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteString(" " + t)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %q", e.Message)
	}
	var details []string
	if e.Type != "" {
		details = append(details, "type "+e.Type)
	}
	if e.Code != "" {
		details = append(details, "code "+e.Code)
	}
	if e.Param != "" {
		details = append(details, "param "+e.Param)
	}
	if len(details) > 0 {
		b.WriteString(" (" + strings.Join(details, ", ") + ")")
	}
	return b.String()
}

// Unwrap returns ErrRateLimited for 429, ErrServer for 5xx and ErrRefused
// for any other status.
func (e *StatusError) Unwrap() error {
	switch {
	case e.StatusCode == http.StatusTooManyRequests:
		return ErrRateLimited
	case e.StatusCode >= 500:
		return ErrServer
	}
	return ErrRefused
}

// Temporary reports whether a later attempt may succeed: true for 429 and
// 5xx.
func (e *StatusError) Temporary() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut
// with "...", and replaces invalid UTF-8.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
