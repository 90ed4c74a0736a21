// Package tools holds lionbus's remote-tool side: the SDK for writing tool
// services in Go, the tool registry, and the NATS implementation of the
// invoker that pkg/ops uses. docs/tools.md describes the protocol, so that
// a tool service can be written in any language without this package.
//
// # Registry
//
// A tool is described by an [Entry], stored as JSON under the tool's name in
// the KV bucket "<prefix>_tools" (default "lion_tools"). [OpenRegistry]
// watches the bucket and keeps a cached view; [Registry.DescribeTools] gives
// the tools' schemas to operate, which offers them to the model.
//
// # Services
//
// [Serve] starts a nats.go micro service (listed by `nats micro ls`) with one
// endpoint per [Tool] on "<prefix>.tool.<name>", in a queue group named
// after the tool, so that replicas share the load. Before a handler runs,
// the invocation's arguments are checked against the tool's JSON Schema
// (code invalid_arguments otherwise) when the service has a [Compiler]
// ([ServiceConfig].Compile: toolschema.Compile, from the package
// pkg/tools/toolschema). The package itself links no schema compiler, and
// neither the engine: it speaks the protocol through pkg/wire. The handler's context ends at the
// invocation's deadline, when the caller cancels it (a lionbus.tool.cancel
// event on "<subject>.cancel"), or on a hard stop. Errors are structured
// results: a handler returns [Errorf] for a code of its own.
//
// While it serves, a service writes back any of its registry entries that
// is missing or changed every [ServiceConfig].Heartbeat (so a replica that
// stops cleanly, removing them, does not hide the tools of the others for
// long); [Service.Stop] removes them unless another replica still answers.
// A service that crashes leaves its entries: calls then fail fast with
// [ErrNoService], an error value, never a hang.
//
// # At most once per idempotency key
//
// The worker gives every call an idempotency key, "<request id>/tool/<index>",
// the same on every delivery of the request. A service remembers the first
// result of each key in the KV bucket "<prefix>_tool_results", shared by its
// replicas, for [DefaultResultWindow] (24 h, the bucket's max age): a
// repeated invocation, even at the same time on another replica, waits for
// and answers that result without running the handler again. Past the
// window the record is gone and the handler runs again. An invocation that
// ended by timeout or cancel before its handler returned an output
// remembers nothing: its effect is unknown, so the next one runs. A replica
// that dies while its handler runs holds the key until the invocation's
// deadline plus 5 s; then another may run it.
//
// # Invoking and governance
//
// [Invoker] implements ops.Invoker (its types are pkg/wire's): a request/reply on the tool's subject
// bounded by the earliest of the tool's timeout ([InvokerConfig].Timeouts or
// Timeout, or [WithCallTimeout]) and the request's deadline, carrying the
// request's traceparent. [Policy] implements ops.Authorizer: tools denied to
// every branch, and an optional remote approver asked on
// "<prefix>.approve.<tool>" that denies by silence.
package tools
