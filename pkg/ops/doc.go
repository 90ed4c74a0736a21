// Package ops implements the lionbus operations layer: a conversation
// ("branch") and the verbs that act on it (chat, chat_and_record,
// communicate, run, run_and_collect, parse, act, operate, interpret,
// react), as decided by
// ADR-0021, ADR-0022 and ADR-0024.
//
// Comments of this package name those decisions as "ADR-0021 D4"; its
// tests name the single rules they check by bullet id ("0021-D4-01").
// Both are defined in docs/decisions.md, which says for each what lionbus
// does; facts about the original library's behaviour are its reference
// notes (docs/decisions.md#reference-a5, ...).
//
// The package is transport-free. It knows nothing of NATS: branch state is a
// plain value, and everything that crosses a process boundary sits behind a
// small interface declared here:
//
//   - [history.Store] loads branches and appends their history events;
//   - [Provider] calls a model (see the provider sub-packages);
//   - [Engine] dispatches a decoded [Request] to its verb.
//
// The seams of the verbs are declared here too, most with an in-memory
// implementation in package opstest for tests and demos:
//
//   - [Invoker] runs act's tool calls (Config.Tools; opstest.ToolFuncs
//     in memory), and [Authorizer] gates them (Config.Authorizer,
//     [AllowTools]);
//   - [StreamingProvider] streams a model's answer as [Chunk]s into a
//     [ChunkSink] (opstest.ChunkBuffer in memory, numbered by
//     [Sequence]); a [CLIProvider] is the kind run accepts; [ChunkOutlet] (Config.Chunks) carries each
//     request's chunks out, and [RunLog] (Config.RunLog) keeps the logs of
//     stream_persist;
//   - [Middle] performs operate's one logical exchange; requests select one
//     by name, the engine's communicate or lndl ([MiddleLNDL]) adapter or
//     one of [Middles];
//   - [Operations] holds the named operations served as "op.NAME".
//
// # Packages
//
// The protocol's types (each verb's request and result, codes, chunks,
// signals) are package [github.com/lionbus/lionbus/pkg/wire]'s: the engine
// decodes a verb's data into its wire type. The branch model is package
// history, prompt rendering package prompt, the provider seam
// ([Provider], [Call], [Completion], [Providers]) package provider and
// the middle seam ([Middle], [MiddleInput], [MiddleResult]) package
// middle; this package re-exports their names. The parts behind the verbs
// are internal: conform (model JSON shaped to a schema), jsonrecover
// (JSON found in text), schema (compiling request schemas, generating
// operate's), parsestage (the parse stage's local attempt, failures and
// retry schedule), decode (request data into its verb's type), outcome
// (the stored form of an outcome), lndlmiddle (the LNDL middle's rounds),
// reactprompt (react's analysis schema and round instructions),
// interpretprompt (interpret's instruction and guidance) and
// transcript (a CLI run's chunks folded into messages). Test doubles are
// package opstest's.
//
// # History and snapshots
//
// The branch model lives in package [github.com/lionbus/lionbus/pkg/ops/history]:
// a branch's history is an ordered log of [history.Event] values, and the
// folded state ([history.Branch]) is derived from it by
// [history.Branch.Apply], so a snapshot can always be rebuilt by replaying
// the log. Everything one operation records is carried by one event, which
// makes an operation's effect on history atomic: it is either entirely
// present or entirely absent.
//
// # Verbs
//
// [Engine.Do] serves branch.create, branch.get, branch.clone, branch.clear,
// branch.delete, branch.history, branch.import, chat, chat_and_record,
// communicate, parse, act, operate, run, interpret, react and the
// registered named operations
// (op.NAME). react runs operate rounds as sub-requests under ids derived
// from its own ("<id>/react/<n>"), so it is idempotent as operate is. The request
// data of each verb is described by schemas/lionbus.<verb>.request.json and its
// result by schemas/lionbus.<verb>.result.json; field names are the ADR
// parameter names (instruction, guidance, context, response_format,
// chat_model, parse_model, skip_validation, clear_messages, request_fields,
// num_parse_retries, sender, recipient, plain_content; for parse also text,
// fuzzy_match, similarity_threshold, handle_validation, max_retries,
// retry_initial_delay and retry_backoff).
//
// # Parsing
//
// communicate (with response_format) and parse share one stage: recover
// JSON from the text (the whole text, fenced blocks, bracketed segments,
// repairing the usual slips), match its keys to the schema's property
// names, coerce its values to the schema's types and validate it; failing
// that, ask the parse model to reformat the text, on ADR-0022 D1's retry
// schedule (waited through Config.Sleep). The two ways it fails, no JSON
// and JSON the schema rejects, are [ErrNoJSON] and [ErrSchemaRejected]
// (CodeExtraction and CodeSchemaRejected for parse; communicate wraps both
// as CodeParse).
//
// # Idempotency
//
// The request id is the idempotency key. communicate, chat_and_record and
// act record their messages and their result in one EventMessages; a request
// whose id is in Branch.Commits (the last MaxRememberedCommits commits) is
// answered from that event without calling a model or a tool, and so is a
// concurrent
// duplicate that loses the append race (ErrAlreadyCommitted). branch.create,
// branch.clone and branch.clear recognise their own redelivery the same way.
// A tool call carries the idempotency key [ToolCallKey] (request id and
// call index), so a tool can recognise a call repeated by a redelivery that
// found nothing committed.
//
// # Actions
//
// act (ADR-0022 D4) runs a list of action requests {function, arguments}
// with the tools of Config.Tools, concurrently (at most
// Config.MaxConcurrentTools at once) or in order. Each call is authorized
// first: its tool must be one of the branch's tools (Settings.Tools) and
// Config.Authorizer, if set, must allow it; a denial is an error-valued
// action response, never a failure. An authorized call emits the signal
// tool.pre, then tool.post or tool.error. Tool failures are error values
// too, unless suppress_errors is false. The requests and responses are
// recorded as action_request and action_response messages with the result;
// a call that answers null gets no response.
//
// # Operate
//
// operate (ADR-0022) composes the stages: it prepares its data (an
// instruct object or loose instruction fields, models, flags), generates a
// request schema (the caller's response_format plus reason, action_required,
// action_requests and the named field_models) and a response schema (the
// same plus action_responses), makes exactly one call to the selected
// [Middle] with the request schema, applies handle_validation against the
// caller's response_format, then runs the result's action_requests through
// the act stage and adds their action_responses to the result. The middle
// records its exchange under the id "<id>/middle", the act stage its calls
// under "<id>/act"; operate emits run.start and one terminal run signal.
//
// The lndl middle (ADR-0024, docs/lndl.md#the-operate-adapter) makes that
// exchange a bounded series of rounds: the model answers in LNDL, each
// answer is classified by lndl.Round, the tool calls a round selects run
// through the act stage, and the first value that validates against the
// request schema is the middle's result. Round N is recorded under
// "<id>/middle/round<N>", its calls under "<id>/middle/round<N>/act", and
// each round emits an lndl.round signal ([SignalLNDLRound]).
//
// # Model-call position
//
// Every EventMessages carries the number of model calls its operation made;
// Branch.ModelCalls is their sum. A model call's [Call.Index] is that sum
// plus the calls the operation already made, so it depends on persisted
// state only: stateless workers in several processes, and a redelivered
// request, compute the same index. The scripted provider uses it to pick its
// reply.
//
// # Prompts
//
// The outgoing messages (package [github.com/lionbus/lionbus/pkg/ops/prompt])
// are the branch's system message (sent as a system message), the history
// turns and the current instruction, rendered as
// readable sections (Guidance, Instruction, Context, Tools, ResponseSchema,
// ResponseFormat with a JSON example derived from the schema). Historical
// instructions are rendered without tools and schema, and action responses
// are folded into the next instruction's Context.
package ops
