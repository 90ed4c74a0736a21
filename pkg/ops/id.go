package ops

import (
	"github.com/google/uuid"
	"github.com/lionbus/lionbus/pkg/wire"
)

// The id rule ([wire.ValidID]): every name that becomes a NATS subject
// token follows it.
const (
	// MaxIDLength bounds an id.
	MaxIDLength = wire.MaxIDLength
	// IDPattern is the rule as a JSON Schema / RE2 pattern.
	IDPattern = wire.IDPattern
	// IDRule says the rule in words, for error messages.
	IDRule = wire.IDRule
)

// ValidID reports whether s is a usable id ([wire.ValidID]).
func ValidID(s string) bool { return wire.ValidID(s) }

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

// requestScopedID returns the id of the branch that request requestID
// creates when the request names none: a UUID (version 5) derived from the
// request id, so that every delivery of one request picks the same id and a
// redelivery after the creation committed finds that branch instead of
// creating a second one. Different request ids give different ids.
func requestScopedID(requestID string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("urn:lionbus:request:"+requestID)).String()
}
