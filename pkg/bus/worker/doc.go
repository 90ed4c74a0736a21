// Package worker is lionbus's worker loop: it consumes requests from the
// shared durable consumer, runs them with a [Handler] (an *ops.Engine) and
// publishes their answers.
//
// A [Worker] fetches from the shared durable consumer "workers", at most
// Config.MaxInFlight requests at a time (the consumer's MaxAckPending
// bounds all workers together). A fetch that fails is retried after a
// pause growing from FetchRetryFirst to FetchRetryMax, logged at most once
// per FetchLogInterval; a consumer found gone is provisioned again. For
// each request it decodes and validates
// it; answers it from the results stream without running it when an answer
// is already stored; runs the [Handler] (an *ops.Engine) with the request's
// trace context and a cancel subject, reporting progress every
// ProgressInterval so the ack wait never expires on long work; then stores
// the answer on lion.reply.<id> (and sends it to a different replyto), and
// acknowledges only after the server stored it. A temporary failure (an
// *ops.Error with Temporary set, or an answer that could not be stored) is
// handed back with a delay from Config.Backoff, up to the consumer's
// MaxDeliver deliveries; the last one answers with the error and records
// the request in the dead-letter stream (the dead-letter section of
// docs/protocol.md lists every case). Bad input is answered and terminated, never retried. [Worker.Stop] drains: no new
// fetches, running requests finish within DrainTimeout, the rest are
// cancelled unacknowledged and redelivered to another worker.
package worker
