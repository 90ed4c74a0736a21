// Package console is the web console of lionbus: server-rendered pages
// (html/template) over the APIs of the Go client (pkg/bus/client),
// with one small embedded script for live updates by server-sent events.
// publisher console serves it on a loopback address, connected with the
// publisher's connection settings, so it shows what that NATS user may
// read (docs/console.md).
//
// The pages: the branches (newest first, searched by id), a branch (its
// history as a timeline: system message, instructions, responses,
// structured results, tool calls with their arguments and results or
// errors, model, usage and cost, times; its lineage), a run (its
// chunks as they stream, or the replay of a finished one), the batches
// (progress and counts that move live, failures with their codes, the
// items), the dead letters (with retry and delete), the approvals (with
// approve and deny, answered as the user of WithApprover) and the tools
// (the registry, the services answering each tool, their recent latency
// and errors). A branch's timeline forks from any event. The console's
// writes are forms posted to itself, refused when posted from another
// site.
package console
