// Package bus wires lionbus's NATS parts into a running worker service:
// [Start] connects to a NATS server (or starts the embedded one), provisions
// the streams, consumer and buckets, and runs a worker over the JetStream
// store, the signal sink and the ops engine.
//
// The parts live in sub-packages, cut along what their users import:
//
//	protocol   the wire protocol: subjects, the id rule, event types, the
//	           CloudEvents codec, error codes, trace context (no server, no worker)
//	client     connecting, and the Go client: submit, await, result, cancel
//	provision  the streams, the shared consumer and the KV buckets
//	embedded   the in-process nats-server
//	store      the JetStream implementation of ops.Store
//	events     ops signals published as CloudEvents
//	worker     the worker loop
//	bustest    test helpers: an embedded server and a running service per test
//
// A program that only sends requests imports client (and protocol); it does
// not link the NATS server. The architecture is described in
// docs/architecture.md and the wire protocol in docs/protocol.md.
package bus
