// Package ops implements the lionbus operations layer: a conversation
// ("branch") and the verbs that act on it (chat, chat_and_record,
// communicate, run, run_and_collect, parse, act, operate), as described by
// ADR-0021, ADR-0022 and ADR-0024.
//
// The package is transport-free. It knows nothing of NATS: branch state is a
// plain value, and everything that crosses a process boundary sits behind a
// small interface declared here:
//
//   - [Store] loads branches and appends their history events;
//   - [Provider] calls a model (see the provider sub-packages);
//   - [Engine] dispatches a decoded [Request] to its verb.
//
// # History and snapshots
//
// A branch's history is an ordered log of [Event] values. The folded state
// ([Branch]) is derived from it by [Branch.Apply], so a snapshot can always be
// rebuilt by replaying the log. Everything one operation records is carried by
// one event, which makes an operation's effect on history atomic: it is either
// entirely present or entirely absent.
package ops
