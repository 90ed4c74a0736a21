// Command benchbus measures what a lionbus request costs, against "the
// floor": a minimal Go worker doing only what any durable JetStream request
// service must do (a JetStream publish of the request to a work-queue stream,
// a durable pull consumer, a stored reply published to a results stream, a
// double ack). Both sides run in this one process on one embedded
// nats-server, so their numbers compare directly.
//
// Three phases run, each printed as a markdown table on stdout (progress goes
// to stderr):
//
//   - throughput and latency, closed loop, for several client counts: req/s,
//     latency percentiles, process CPU per request, NATS messages and bytes
//     per request, and the lionbus/floor ratios;
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
