package wire

import "strconv"

// The id rule. Every name that becomes a NATS subject token (branch ids,
// request ids, named operations, tool names, the subject prefix) follows it;
// this is its one definition, and the JSON Schemas state it as IDPattern (a
// test checks that they agree).
const (
	// MaxIDLength bounds an id.
	MaxIDLength = 128
	// IDPattern is the rule as a JSON Schema / RE2 pattern.
	IDPattern = `^[A-Za-z0-9_-]{1,128}$`
	// IDRule says the rule in words, for error messages.
	IDRule = "1 to 128 characters of [A-Za-z0-9_-]"
)

// ValidID reports whether s is a usable id: 1 to MaxIDLength characters of
// [A-Za-z0-9_-], so that it is a valid subject token.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !idByte(s[i]) {
			return false
		}
	}
	return true
}

func idByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// ToolCallKey returns the idempotency key of the index-th tool call (from 0,
// in the order the request makes its calls) of request requestID:
// "<requestID>/tool/<index>". Every delivery of a request computes the same
// keys for the same calls.
func ToolCallKey(requestID string, index int) string {
	return requestID + "/tool/" + strconv.Itoa(index)
}
