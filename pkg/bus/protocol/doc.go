// Package protocol is lionbus's wire protocol in Go: subject names, the id
// rule, event types, the CloudEvents-over-NATS codec, error codes and trace
// context. It imports no NATS server and no worker code, so clients and tool
// services can use it alone. The protocol is described for every language in
// docs/protocol.md.
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
//	lion.events.<branch>.<tok>   observations  stream LION_EVENTS, MaxAge
//	lion.tool.<name>             tool calls    core request/reply
//	lion.cancel.<request id>     cancellation  core NATS
//	lion_branches, lion_tools    KV buckets    branch snapshots, tool registry
//
// provision.Ensure creates what is missing and never changes what exists: a
// resource whose configuration conflicts (subjects, retention, storage, ack
// policy, ...) is reported with provision.ErrConfigConflict; a resource that differs
// only in a tunable limit is listed in provision.Resources.Drift. Every limit is a
// provision.Config field with a documented default. LION_HISTORY and LION_RESULTS
// allow direct gets, so the store's and the clients' reads by subject and
// sequence are served by any replica without the JetStream API queue; a
// stream created without them (by an earlier version) is drift and is read
// through the API.
//
// # CloudEvents
//
// Every message is a CloudEvent 1.0. A request for verb V has type
// lionbus.V.request and is published to lion.ops.V; its id is the request
// id, the JetStream message id (duplicates within provision.Config.DuplicateWindow are
// dropped) and a subject token. Extension attributes: branchid (the branch
// of a branch-scoped verb, see [BranchScoped]), replyto (where the answer
// goes; default lion.reply.<id>), traceparent and tracestate (W3C trace
// context, propagated to everything the request causes; a request without
// one gets a new one), and, on answers, requestid (the id of the request
// answered). The answer is lionbus.V.result (data: the wire.Result) or
// lionbus.error (data: [ErrorData]); see [EventBuilder]. A replyto inside
// lion.> is refused (invalid_attribute) unless it is the request's own
// lion.reply.<id>: the results stream keeps one answer per subject, so
// another request's reply subject would replace that request's answer.
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
// The size limit (CodecConfig.MaxPayload, headers and body) is checked before
// parsing. A request the codec rejects gets an [*EventError] with a stable
// code (malformed_event, missing_attribute, unsupported_specversion,
// unknown_type, invalid_data, invalid_branch_id, missing_branch_id,
// invalid_attribute, payload_too_large) and, when its id or replyto could be
// read, the subject to answer on. Request data is validated against the
// embedded JSON Schemas of package schemas.
//
// # Signal events
//
// The events.Sink publishes each signal of the engine as a CloudEvent of
// type lionbus.<signal type> (lionbus.run.start, lionbus.run.end,
// lionbus.run.failed, lionbus.message.added, act's hooks lionbus.tool.pre,
// lionbus.tool.post and lionbus.tool.error, and the LNDL middle's
// lionbus.lndl.round) on lion.events.<branch>.<tok>, tok being the signal
// type with its dots replaced by underscores ([EventToken]: run_start,
// message_added, ...), and kept in LION_EVENTS for
// provision.Config.EventsMaxAge. Events carry branchid, requestid and the
// request's traceparent; their data ([SignalData]: verb, branch_id,
// request_id, time, and the recorded message, the result, the tool call, the
// LNDL round or the error {code, message}) has a schema per type in package
// schemas. For one communicate they arrive in order: run.start,
// message.added per recorded message, then run.end or run.failed; for one
// act, tool.pre then tool.post or tool.error per authorized call, then
// message.added per recorded message. Observers subscribe to
// lion.events.<branch>.> or, e.g., lion.events.*.run_failed.
package protocol
