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
//	lion.events.<branch>.<tok>   observations  stream LION_EVENTS, MaxAge
//	lion.tool.<name>             tool calls    core request/reply
//	lion.cancel.<request id>     cancellation  core NATS
//	lion_branches, lion_tools    KV buckets    branch snapshots, tool registry
//
// [Provision] creates what is missing and never changes what exists: a
// resource whose configuration conflicts (subjects, retention, storage, ack
// policy, ...) is reported with [ErrConfigConflict]; a resource that differs
// only in a tunable limit is listed in [Resources.Drift]. Every limit is a
// [Config] field with a documented default. LION_HISTORY and LION_RESULTS
// allow direct gets, so the store's and the clients' reads by subject and
// sequence are served by any replica without the JetStream API queue; a
// stream created without them (by an earlier version) is drift and is read
// through the API.
//
// # CloudEvents
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
// The size limit (Config.MaxPayload, headers and body) is checked before
// parsing. A request the codec rejects gets an [*EventError] with a stable
// code (malformed_event, missing_attribute, unsupported_specversion,
// unknown_type, invalid_data, invalid_branch_id, missing_branch_id,
// invalid_attribute, payload_too_large) and, when its id or replyto could be
// read, the subject to answer on. Request data is validated against the
// embedded JSON Schemas of package schemas.
//
// # Worker
//
// A [Worker] fetches from the shared durable consumer "workers", at most
// WorkerConfig.MaxInFlight requests at a time (the consumer's MaxAckPending
// bounds all workers together). For each request it decodes and validates
// it; answers it from the results stream without running it when an answer
// is already stored; runs the [Handler] (an *ops.Engine) with the request's
// trace context and a cancel subject, reporting progress every
// ProgressInterval so the ack wait never expires on long work; then stores
// the answer on lion.reply.<id> (and sends it to a different replyto), and
// acknowledges only after the server stored it. A temporary failure (an
// *ops.Error with Temporary set, or an answer that could not be stored) is
// handed back with a delay from WorkerConfig.Backoff, up to the consumer's
// MaxDeliver deliveries; the last one answers with the error. Bad input is
// answered and terminated, never retried. [Worker.Stop] drains: no new
// fetches, running requests finish within DrainTimeout, the rest are
// cancelled unacknowledged and redelivered to another worker.
//
// # Store
//
// [Store] implements ops.Store. History is the source of truth: every
// change to a branch is an event on lion.history.<branch>, appended with
// the expected last subject sequence, so concurrent writers never
// overwrite each other (the loser folds what it missed and appends after
// it), and with a Nats-Msg-Id of branch, request and event type, so a
// repeated append is stored once. The lion_branches bucket holds a msgpack
// snapshot of the folded branch (its commits as one compact table) and the
// sequence it reflects; Load replays the events after it, and a missing,
// corrupt or stale snapshot is rebuilt from history. Snapshot writes are
// best-effort, conditional on the revision read, and never move a snapshot
// backwards. History pages are bounded by [MaxHistoryLimit].
//
// # Client
//
// [Client] submits requests (the event id is also the JetStream message id,
// so a repeated Submit with the same id is stored once), waits for answers
// ([Client.Await] subscribes to lion.reply.<id> and also reads the results
// stream, so an answer stored earlier is not missed), reads a stored answer
// later ([Client.Result], within Config.ResultsMaxAge) and cancels
// ([Client.Cancel]). A lionbus.error answer is a [Reply] whose Err is a
// *[RemoteError] with the stable code.
//
// # Signal events
//
// [EventSink] implements ops.Signals (pass it as ops.Config.Signals): each
// signal of the engine is published as a CloudEvent of type lionbus.<signal
// type> (lionbus.run.start, lionbus.run.end, lionbus.run.failed,
// lionbus.message.added) on lion.events.<branch>.<tok>, tok being the
// signal type with its dots replaced by underscores ([EventToken]:
// run_start, message_added, ...), and kept in LION_EVENTS for
// Config.EventsMaxAge. Events carry branchid, requestid and the request's
// traceparent; their data ([SignalData]: verb, branch_id, request_id, time,
// and the recorded message, the result or the error {code, message}) has a
// schema per type in package schemas. For one communicate they arrive in
// order: run.start, message.added per recorded message, then run.end or
// run.failed. Observers subscribe to lion.events.<branch>.> or, e.g.,
// lion.events.*.run_failed.
//
// # Tests
//
// Package bustest starts an embedded server for a test and connects to it.
package bus
