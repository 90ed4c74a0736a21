// Package lndl implements LNDL, the language a model uses in lionbus's
// multi-round operate adapter to mix free reasoning with declared values
// (<lvar>), declared tool calls (<lact>) and one commit block (OUT{...}).
//
// The package is pure: no I/O, no NATS, no goroutines. Its stages are
// fenced-block extraction ([Extract]), conservative normalization
// ([Normalize]), lexing and parsing to a [Program] ([Parse]), lact call
// parsing ([ParseCall]), assembly against a JSON Schema target, the round
// classifier used by the adapter, the Specs line renderer and the system
// prompt.
//
// Every error is an LNDL error: errors.Is(err, ErrLNDL) holds, and errors.As
// tells the five classes apart (*ParseError, *MissingLvarError,
// *MissingFieldError, *TypeMismatchError, *InvalidConstructorError).
package lndl
