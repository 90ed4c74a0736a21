// Command benchbus measures what a lionbus request costs, against "the
// floor": a minimal Go worker doing only what any durable JetStream request
// service must do (a JetStream publish of the request to a work-queue stream,
// a durable pull consumer, a stored reply published to a results stream, a
// double ack), and against "the same-messages floor": the floor plus exactly
// what a communicate stores besides its request and answer (one history
// append expecting the subject's last sequence, four signal events
// published without waiting and awaited while the reply is stored). Every
// side runs in this one process on one embedded nats-server, so their
// numbers compare directly; a CPU profile of each measured run splits the
// CPU between the server, the worker and the clients. With -same-bytes the
// same-messages floor's payloads take the sizes of lionbus's (measured by
// one probe request), so that the two sides move the same bytes.
//
// Three phases run, each printed as a markdown table on stdout (progress goes
// to stderr):
//
//   - throughput and latency, closed loop, for several client counts: req/s,
//     latency percentiles, process CPU per request (server, worker,
//     client), NATS messages and bytes per request, and the ratios of
//     lionbus to each floor; then, counted by a subscription to ">", the
//     messages the server handles per request and their bytes, by kind;
//   - the history-length curve: the latency and the bytes written per
//     communicate as a branch grows;
//   - a hot branch: many clients sending communicate to one branch at once,
//     checking that each request is answered once, counting repeated model
//     calls and redeliveries, and comparing the order of the branch's history
//     with the order the requests were stored in LION_OPS.
//
// Run it with
//
//	go run ./pkg/bus/internal/benchbus [flags]
//
// or `make bench-bus BENCHBUS_FLAGS=...`; -quick is a short smoke run and -h
// lists the flags.
package main
