// Package histexport is the public export format of a branch's history:
// JSON lines, one CloudEvent (structured mode, specversion 1.0) per
// line, each carrying a SHA-256 hash chained to the line before it, so
// that any edited byte, dropped, inserted or reordered line is detected
// and located.
//
// A file is a header line (type [TypeHeader], data naming the format
// version [Format] and the branch), one line per history event (type
// "lionbus." plus the event's type, data the event as branch.history
// answers it), and an end line (type [TypeEnd], data the number of
// events and the last sequence). Every line starts with its hash
// member, {"lionhash":"<64 lowercase hex>", and the rest of the line
// after that member, with the opening brace put back, is the line's
// canonical bytes (itself a CloudEvent in JSON); the hash is
// SHA-256(previous hash || canonical bytes), the previous hash of the
// header being 32 zero bytes. docs/history.md describes the format for
// verifiers in any language.
//
// [Writer] writes a file, [Reader] reads one and checks it line by line,
// [Verify] checks a whole file. The package links no engine: it speaks
// the history events of package wire.
package histexport
