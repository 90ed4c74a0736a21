package ops

import "github.com/google/uuid"

// The id rule. Every name that becomes a NATS subject token (branch ids,
// request ids, named operations, tool names, the subject prefix) follows it;
// this is its one definition, and the JSON Schemas in package schemas state
// it as IDPattern (a test checks that they agree).
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

// checkID returns a CodeInvalidRequest error naming what is wrong with id.
func checkID(field, id string) error {
	switch {
	case id == "":
		return Errorf(CodeInvalidRequest, "%s is required", field)
	case len(id) > MaxIDLength:
		return Errorf(CodeInvalidRequest, "%s is %d characters long; at most %d are allowed", field, len(id), MaxIDLength)
	case !ValidID(id):
		return Errorf(CodeInvalidRequest, "%s %q may only contain letters, digits, '_' and '-'", field, id)
	}
	return nil
}

// NewID returns a new random id (a UUID v4), valid as a branch id.
func NewID() string { return uuid.NewString() }

// requestScopedID returns the id of the branch that request requestID
// creates when the request names none: a UUID (version 5) derived from the
// request id, so that every delivery of one request picks the same id and a
// redelivery after the creation committed finds that branch instead of
// creating a second one. Different request ids give different ids.
func requestScopedID(requestID string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("urn:lionbus:request:"+requestID)).String()
}
