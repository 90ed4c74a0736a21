package wire

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code. Codes appear on the wire in
// lionbus.error events; clients match on them, so they never change meaning.
type Code string

// Error codes produced by the operations layer.
const (
	CodeInvalidRequest Code = "invalid_request"  // data is well-formed but unusable
	CodeUnknownVerb    Code = "unknown_verb"     // no such verb or named operation
	CodeBranchNotFound Code = "branch_not_found" // the branch has no history
	CodeBranchExists   Code = "branch_exists"    // branch.create of an existing id
	CodeProvider       Code = "provider_error"   // the model provider failed
	CodeParse          Code = "parse_failed"     // the response could not be parsed
	CodeAction         Code = "action_failed"    // a tool call of act failed with errors not suppressed
	CodeTimeout        Code = "timeout"          // a deadline passed
	CodeCanceled       Code = "canceled"         // the request was cancelled
	CodeInternal       Code = "internal"         // a bug or an unexpected failure
	CodeUnavailable    Code = "unavailable"      // the state store failed; worth retrying
)

// Error codes of the parse verb, one for each way the parse stage fails
// (communicate answers both as CodeParse).
const (
	CodeExtraction     Code = "extraction_failed" // no JSON object or array found in the text
	CodeSchemaRejected Code = "schema_rejected"   // JSON found, but it does not satisfy the schema
)

// Codes returns every code the operations layer produces.
func Codes() []Code {
	return []Code{
		CodeInvalidRequest, CodeUnknownVerb, CodeBranchNotFound, CodeBranchExists,
		CodeProvider, CodeParse, CodeAction, CodeTimeout, CodeCanceled, CodeInternal, CodeUnavailable,
		CodeExtraction, CodeSchemaRejected,
	}
}

// Error is an operation failure with a stable [Code]. Temporary errors are
// worth retrying (the bus retries them with backoff); the others are final
// and answered with an error event.
type Error struct {
	Code      Code
	Message   string
	Temporary bool
	Err       error
}

// Error returns the message, prefixed by the code.
func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return fmt.Sprintf("%s: %v", e.Code, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns a final *Error with the given code.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Sentinel errors of the branch codes: a store and the engine return them,
// and a client's remote error of CodeBranchNotFound or CodeBranchExists
// matches them (errors.Is).
var (
	// ErrBranchNotFound means the branch has no history.
	ErrBranchNotFound = errors.New("ops: branch not found")
	// ErrBranchExists means a branch with that id already has history.
	ErrBranchExists = errors.New("ops: branch already exists")
)
