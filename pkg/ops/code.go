package ops

import "github.com/lionbus/lionbus/pkg/wire"

// Code is a stable, machine-readable error code ([wire.Code]).
type Code = wire.Code

// Error codes produced by the operations layer (see package wire).
const (
	CodeInvalidRequest = wire.CodeInvalidRequest
	CodeUnknownVerb    = wire.CodeUnknownVerb
	CodeBranchNotFound = wire.CodeBranchNotFound
	CodeBranchExists   = wire.CodeBranchExists
	CodeProvider       = wire.CodeProvider
	CodeParse          = wire.CodeParse
	CodeAction         = wire.CodeAction
	CodeTimeout        = wire.CodeTimeout
	CodeCanceled       = wire.CodeCanceled
	CodeInternal       = wire.CodeInternal
	CodeUnavailable    = wire.CodeUnavailable
	CodeExtraction     = wire.CodeExtraction
	CodeSchemaRejected = wire.CodeSchemaRejected
)

// Error is an operation failure with a stable [Code] ([wire.Error]).
type Error = wire.Error

// Errorf returns a final *Error with the given code.
func Errorf(code Code, format string, args ...any) *Error {
	return wire.Errorf(code, format, args...)
}
