// Package lndl implements LNDL, the language a model uses in lionbus's
// multi-round operate adapter to mix free reasoning with declared values
// (<lvar>), declared tool calls (<lact>) and one commit block (OUT{...}).
//
// The package is pure: no I/O, no NATS, no goroutines. Every function may
// be called concurrently; values it returns are not modified afterwards.
//
// # Stages
//
// A model response goes through these stages (docs/lndl.md#stages);
// [Round] runs them in order and classifies the response:
//
//   - [Extract] finds the ```lndl fenced blocks.
//   - [Normalize] (or [NormalizeBlock] for text already extracted) makes
//     the conservative repairs: missing `>` on lacts, curly tags, tag
//     attributes, `Note.` heads.
//   - [Parse] lexes and parses the text to a [Program]: its lvars, lacts
//     and OUT block, each with the byte offset of its tag
//     ([Program.Position] gives line and column). [Out.Fields] merges the
//     OUT entries, binding shortcuts and groups with
//     [Program.DefaultBinding] or, in assembly, with the target's rules.
//   - [ParseCall] parses a lact body, a Python call with literal
//     arguments, into an [Action]'s function and arguments.
//   - [ParseTarget] reads a JSON Schema target (as pydantic writes it);
//     [Assemble] builds the OUT value against it, with a *[Placeholder]
//     for every action that has not run, and the notes scratchpad.
//   - [Round] classifies one response as continue, retry or success and
//     lists the pending actions; [RoundResult.Resolve] assembles again
//     with their results.
//   - [Target.Validate] coerces the value laxly, as pydantic does, and
//     checks it with the JSON Schema validator
//     (github.com/santhosh-tekuri/jsonschema/v6).
//   - [Render] writes the `Specs:` line that tells the model the target;
//     the system prompt teaches the language.
//
// # Errors
//
// Every error of the language is an LNDL error: errors.Is(err, ErrLNDL)
// holds, and errors.As tells the five classes apart:
//
//   - *[ParseError]: the text does not lex or parse (with line and
//     column), or exceeds a parser bound;
//   - *[MissingLvarError]: OUT references an alias nothing declares;
//   - *[MissingFieldError]: required target fields are absent from OUT;
//   - *[TypeMismatchError]: an alias declared for one model fills a field
//     of another;
//   - *[InvalidConstructorError]: a lact body is not a valid call; its
//     reason matches [ErrCallLimit] when a call bound was exceeded.
//
// Validation fails with a *[ValidationError] listing every issue; it
// matches both [ErrValidation] and [ErrLNDL]. A schema that cannot be used
// is an error wrapping [ErrInvalidTarget]; [RoundResult.Resolve] on a
// round that did not succeed returns [ErrNotSuccess]; [DecodeJSON] rejects
// input nested too deep with [ErrJSONTooDeep].
//
// # Bounds
//
// Everything that grows with the input is bounded; hostile input gets a
// specific error, never a panic, a hang or unbounded memory:
//
//   - [MaxInputBytes] (1 MiB): the largest response [Round] and text
//     [Parse] accept.
//   - [MaxDepth] (32): the deepest nesting of brackets in an OUT block.
//   - [MaxDeclarations] (10000): lvars and lacts in one text.
//   - [MaxOutEntries] (10000): entries in one OUT block.
//   - [MaxIntDigits] (4300): digits of an integer literal in OUT.
//   - [MaxCallBodyLen] (1 MiB): the longest lact body [ParseCall] accepts.
//   - [MaxCallDepth] (32): the deepest nesting of brackets in a call.
//   - [MaxCallIntDigits] (4300): digits of an integer call argument, and
//     of an integer [Target.Validate] accepts.
//   - [MaxSchemaSize] (1 MiB): the largest target schema.
//   - [MaxTypeDepth] (64): the deepest nesting of types in a target,
//     counting each $ref step.
//   - [MaxJSONDepth] (256): the deepest nesting of arrays and objects in
//     JSON that [DecodeJSON] reads and in a value [Target.Validate]
//     checks.
//
// Float literals must be finite. Parsing, normalization, extraction and a
// round take time linear in the size of their input; a round's assembled
// value is linear in the response plus the action results it references.
// The system prompt functions bound the error messages and action results
// they quote, as their documentation says.
//
// # Speed
//
// A round always normalizes its blocks and then parses them, with the one
// parser; every lact body is read by the one call parser. Two speed-ups
// remain, each measured to make a whole round at least 1.5 times faster
// at some size class:
//
//   - Pooled storage. A round parses into storage taken from a sync.Pool
//     and returned when the round ends: its result keeps only what
//     [RoundResult.Resolve] needs (the fields that refer to actions or
//     results, copied, and the declarations they name). That storage
//     keeps at most 1024 elements per slice (larger is dropped), is not
//     cleared (every element is written before it is read) and holds on
//     to the last round's strings no longer than the pool keeps it. The
//     parser's list stack, the assembler, the call parser and
//     [Target.Validate] take their scratch space from pools too.
//   - The schema validator skip. [Target.Validate] does not run the JSON
//     Schema validator when the schema asserts only what its lax coercion
//     already enforces (types, properties, required fields, items, enums;
//     annotations assert nothing) and the defaults it filled in stay
//     within [MaxJSONDepth]: a value the coercion accepts then always
//     satisfies the schema.
//
// The rule: a fast path (a second way to compute, for a common shape of
// input, what the plain code computes) stays only while a whole-round
// benchmark (BenchmarkRound) shows it makes a round at least 1.5 times
// faster at some size class, and a fuzz test checks that it gives what
// the plain path gives (FuzzValidate does for the schema validator skip).
// `make bench` reports a whole round and each stage.
package lndl
