// Package wire holds the vocabulary of the lionbus protocol: the data of
// every event the bus carries, as Go types.
//
// It has the error codes ([Code]), the id rule ([ValidID]), the request and
// the result of every verb ([CommunicateRequest], [CommunicateResult], ...),
// the chunks of a streamed answer ([Chunk]), the lifecycle and tool signals
// ([Signal]), and the tool invocation and outcome ([ToolInvocation],
// [ToolOutcome]). Its JSON form is the protocol: each request type encodes
// to the data of a lionbus.V.request event, each result type decodes the
// data of a lionbus.V.result event, and the JSON Schemas in schemas/ state
// the same fields (a test compares them both ways).
//
// The package imports the standard library only. Clients, tool services
// and the engine share it, so a program that only sends requests or serves
// tools links neither the engine nor a JSON Schema compiler.
//
// The instruction fields that several verbs share are declared once and
// embedded: [Prompt] (what every instruction verb takes), [Turn]
// (plus plain content and clear_messages), [ChatRequest] (plus the parse
// model and response format). Optional fields that have a default are
// pointers, so that an absent field and a zero value stay apart.
package wire
