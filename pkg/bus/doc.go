// Package bus is everything lionbus does with NATS: starting an embedded
// server or connecting to one, provisioning streams, the consumer and the
// buckets, the CloudEvents-over-NATS codec, the worker loop, the NATS state
// store and a Go client.
//
// # Connecting
//
// [StartServer] runs an in-process nats-server with JetStream (loopback,
// store directory, configurable port); [Connect] reaches any NATS server
// with user/password, token, nkey seed, creds file and TLS, reconnecting
// forever once connected. After connecting, both paths are the same:
// [Provision] with a jetstream.JetStream handle.
//
// # Subjects, streams and buckets
//
// Every name derives from one prefix (default "lion", see [Subjects]):
//
//	lion.ops.<verb>              requests      stream LION_OPS, work-queue retention,
//	                                           durable pull consumer "workers"
//	lion.reply.<request id>      answers       stream LION_RESULTS, last per subject, MaxAge
//	lion.chunk.<request id>      run chunks    core NATS
//	lion.history.<branch>        event log     stream LION_HISTORY, limits, no age limit
//	lion.events.<branch>.<type>  observations  stream LION_EVENTS, MaxAge
//	lion.tool.<name>             tool calls    core request/reply
//	lion.cancel.<request id>     cancellation  core NATS
//	lion_branches, lion_tools    KV buckets    branch snapshots, tool registry
//
// [Provision] creates what is missing and never changes what exists: a
// resource whose configuration conflicts (subjects, retention, storage, ack
// policy, ...) is reported with [ErrConfigConflict]; a resource that differs
// only in a tunable limit is listed in [Resources.Drift]. Every limit is a
// [Config] field with a documented default.
//
// # Events
//
// Every message is a CloudEvent 1.0. A request for verb V has type
// lionbus.V.request and is published to lion.ops.V; its id is the request
// id, the JetStream message id (duplicates within Config.DuplicateWindow are
// dropped) and a subject token. Extension attributes: branchid (the branch
// of a branch-scoped verb, see [BranchScoped]), replyto (where the answer
// goes; default lion.reply.<id>), traceparent and tracestate (W3C trace
// context, propagated to everything the request causes; a request without
// one gets a new one), and, on answers, requestid (the id of the request
// answered). The answer is lionbus.V.result (data: the ops.Result) or
// lionbus.error (data: [ErrorData]); see [EventBuilder].
//
// # Content modes
//
// Both modes of the NATS binding are read and written by [Codec] and
// [Encode]:
//
//   - structured: the body is the JSON event format, header Content-Type:
//     application/cloudevents+json. A JSON body with no Content-Type at all
//     (what `nats pub` sends) is read as structured too.
//   - binary: every attribute is a ce-<name> header, the body is the data.
//     Headers are written in lower case, always with ce-specversion, values
//     percent-encoded where needed; they are read case-insensitively,
//     quoted or percent-encoded values accepted.
//
// The receive rule accepts what the CloudEvents binding and the sdk-go NATS
// transport send: a ce-specversion header means binary; otherwise a
// Content-Type starting with application/cloudevents, or none, means
// structured; any other Content-Type means binary.
//
// # Bad input
//
// The size limit (Config.MaxPayload, headers and body) is checked before
// parsing. A request the codec rejects gets an [*EventError] with a stable
// code (malformed_event, missing_attribute, unsupported_specversion,
// unknown_type, invalid_data, invalid_branch_id, missing_branch_id,
// invalid_attribute, payload_too_large) and, when its id or replyto could be
// read, the subject to answer on. Request data is validated against the
// embedded JSON Schemas of package schemas.
//
// # Tests
//
// Package bustest starts an embedded server for a test and connects to it.
package bus
