package protocol

import (
	"fmt"

	"github.com/lionbus/lionbus/pkg/wire"
)

// DefaultPrefix is the subject prefix used when none is configured.
const DefaultPrefix = "lion"

// MaxTokenLength bounds a branch id, request id, tool name or any other
// name that becomes a subject token. The rule is ops' id rule
// ([wire.MaxIDLength], [wire.IDPattern]).
const MaxTokenLength = wire.MaxIDLength

// ValidToken reports whether s may be used as a single subject token:
// 1 to MaxTokenLength characters of [A-Za-z0-9_-] (it is [wire.ValidID]).
func ValidToken(s string) bool { return wire.ValidID(s) }

// Subjects derives every subject, stream, consumer and bucket name from one
// prefix. The zero value is not usable; use [NewSubjects].
type Subjects struct {
	Prefix string
}

// NewSubjects returns the names for prefix ("" means [DefaultPrefix]).
// The prefix must be a valid token.
func NewSubjects(prefix string) (Subjects, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !ValidToken(prefix) {
		return Subjects{}, fmt.Errorf("protocol: invalid subject prefix %q", prefix)
	}
	return Subjects{Prefix: prefix}, nil
}

// Op is the request subject of verb, e.g. "lion.ops.communicate".
// Verbs may contain dots ("branch.create", "op.NAME").
func (s Subjects) Op(verb string) string { return s.Prefix + ".ops." + verb }

// OpsWildcard matches every request subject.
func (s Subjects) OpsWildcard() string { return s.Prefix + ".ops.>" }

// Reply is the default reply subject of request id, kept in the results stream.
func (s Subjects) Reply(id string) string { return s.Prefix + ".reply." + id }

// RepliesWildcard matches every default reply subject.
func (s Subjects) RepliesWildcard() string { return s.Prefix + ".reply.>" }

// Chunk is the subject of the streamed chunks of run request id.
func (s Subjects) Chunk(id string) string { return s.Prefix + ".chunk." + id }

// ChunksWildcard matches every chunk subject.
func (s Subjects) ChunksWildcard() string { return s.Prefix + ".chunk.>" }

// RunLog is the subject of the live chunk log of run request id
// (stream_persist) in the run log directory dir:
// "lion.runlog.<dir>.<id>.chunks"; RunSnapshot that of its branch
// snapshots.
func (s Subjects) RunLog(dir, id string) string {
	return s.Prefix + ".runlog." + dir + "." + id + ".chunks"
}

// RunSnapshot is the subject of the branch snapshots of run request id in
// the run log directory dir: "lion.runlog.<dir>.<id>.snapshot".
func (s Subjects) RunSnapshot(dir, id string) string {
	return s.Prefix + ".runlog." + dir + "." + id + ".snapshot"
}

// RunLogDirWildcard matches every run log and snapshot subject of the run
// log directory dir: "lion.runlog.<dir>.>", what a consumer or a
// permission reading one directory names.
func (s Subjects) RunLogDirWildcard(dir string) string { return s.Prefix + ".runlog." + dir + ".>" }

// RunLogWildcard matches every run log and snapshot subject, in every
// directory.
func (s Subjects) RunLogWildcard() string { return s.Prefix + ".runlog.>" }

// Journal is the subject of the journaled completion key of a request's
// model call (see package pkg/bus/journal).
func (s Subjects) Journal(key string) string { return s.Prefix + ".journal." + key }

// JournalWildcard matches every journal subject.
func (s Subjects) JournalWildcard() string { return s.Prefix + ".journal.>" }

// History is the history subject of branch.
func (s Subjects) History(branch string) string { return s.Prefix + ".history." + branch }

// HistoryWildcard matches every history subject.
func (s Subjects) HistoryWildcard() string { return s.Prefix + ".history.>" }

// Events is the subject of an event of type typ about branch.
func (s Subjects) Events(branch, typ string) string {
	return s.Prefix + ".events." + branch + "." + typ
}

// EventsWildcard matches every lifecycle, message-added and hook event.
func (s Subjects) EventsWildcard() string { return s.Prefix + ".events.>" }

// Tool is the invocation subject of tool name.
func (s Subjects) Tool(name string) string { return s.Prefix + ".tool." + name }

// Cancel is the subject on which request id may be cancelled.
func (s Subjects) Cancel(id string) string { return s.Prefix + ".cancel." + id }

// CancelWildcard matches every cancel subject.
func (s Subjects) CancelWildcard() string { return s.Prefix + ".cancel.>" }

// Lease is the subject of the lease that pins a branch to one worker.
func (s Subjects) Lease(branch string) string { return s.Prefix + ".lease." + branch }

// LeasesWildcard matches every lease subject.
func (s Subjects) LeasesWildcard() string { return s.Prefix + ".lease.>" }

// LeaseWant is the core NATS subject on which a worker waiting for a
// branch's lease asks its holder to let it go.
func (s Subjects) LeaseWant(branch string) string { return s.Prefix + ".leasewant." + branch }

// LeaseWantWildcard matches every LeaseWant subject, and every LeaseFree
// subject.
func (s Subjects) LeaseWantWildcard() string { return s.Prefix + ".leasewant.>" }

// LeaseFreeSuffix ends a LeaseFree subject.
const LeaseFreeSuffix = ".free"

// LeaseFree is the core NATS subject on which a worker that let a branch's
// lease go because another worker asked for it says so, so that the
// workers waiting for it try to take it at once instead of at their next
// poll: <prefix>.leasewant.<branch>.free.
func (s Subjects) LeaseFree(branch string) string { return s.LeaseWant(branch) + LeaseFreeSuffix }

// DeadLetter is the subject of the dead letter of key, a request id or,
// for a request whose id could not be read, "seq-<its ops stream
// sequence>": "lion.dlq.<key>".
func (s Subjects) DeadLetter(key string) string { return s.Prefix + ".dlq." + key }

// DeadLettersWildcard matches every DeadLetter subject.
func (s Subjects) DeadLettersWildcard() string { return s.Prefix + ".dlq.>" }

// Stream, consumer and bucket names. Stream names are upper case; the
// prefix is included so that two deployments can share one account.
func (s Subjects) OpsStream() string       { return upper(s.Prefix) + "_OPS" }
func (s Subjects) ResultsStream() string   { return upper(s.Prefix) + "_RESULTS" }
func (s Subjects) HistoryStream() string   { return upper(s.Prefix) + "_HISTORY" }
func (s Subjects) EventsStream() string    { return upper(s.Prefix) + "_EVENTS" }
func (s Subjects) LeasesStream() string    { return upper(s.Prefix) + "_LEASES" }
func (s Subjects) DeadStream() string      { return upper(s.Prefix) + "_DLQ" }
func (s Subjects) ChunksStream() string    { return upper(s.Prefix) + "_CHUNKS" }
func (s Subjects) RunLogStream() string    { return upper(s.Prefix) + "_RUNLOG" }
func (s Subjects) JournalStream() string   { return upper(s.Prefix) + "_JOURNAL" }
func (s Subjects) WorkersConsumer() string { return "workers" }
func (s Subjects) BranchesBucket() string  { return s.Prefix + "_branches" }
func (s Subjects) ToolsBucket() string     { return s.Prefix + "_tools" }

// ToolResultsBucket is the KV bucket where tool services remember results
// by idempotency key.
func (s Subjects) ToolResultsBucket() string { return s.Prefix + "_tool_results" }

// BudgetsBucket is the KV bucket of the fleet's model budgets (see
// package bus/budget).
func (s Subjects) BudgetsBucket() string { return s.Prefix + "_budgets" }

// BudgetMembersBucket is the KV bucket where each worker keeps its
// membership of the fleet's budget split alive.
func (s Subjects) BudgetMembersBucket() string { return s.Prefix + "_budget_members" }

// BudgetPause is the core subject on which a worker tells the fleet to
// pause a model (a provider's 429 or exhausted rate-limit headers).
func (s Subjects) BudgetPause() string { return s.Prefix + ".budget.pause" }

// BatchesBucket is the KV bucket of batch records, by batch id.
func (s Subjects) BatchesBucket() string { return s.Prefix + "_batches" }

// BatchInputBucket is the object store holding each batch's JSONL input.
func (s Subjects) BatchInputBucket() string { return s.Prefix + "_batch_input" }

// BatchResultsStream is the stream of batch item results.
func (s Subjects) BatchResultsStream() string { return upper(s.Prefix) + "_BATCH_RESULTS" }

// BatchResult is the subject of the result of item itemKey of batch
// batchID, e.g. "lion.batch.result.b1.<key>".
func (s Subjects) BatchResult(batchID, itemKey string) string {
	return s.Prefix + ".batch.result." + batchID + "." + itemKey
}

// BatchResults matches the results of every item of batch batchID.
func (s Subjects) BatchResults(batchID string) string {
	return s.Prefix + ".batch.result." + batchID + ".*"
}

// BatchResultsWildcard matches the results of every batch.
func (s Subjects) BatchResultsWildcard() string { return s.Prefix + ".batch.result.>" }

// BatchProgress is the core subject where the worker driving batch batchID
// publishes its record (JSON) whenever it writes it.
func (s Subjects) BatchProgress(batchID string) string {
	return s.Prefix + ".batch.progress." + batchID
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// ApprovalAnswer is the subject an approver named user publishes its
// answer to approval id (of tool) on. The user's name ends it, so that the
// server's permissions make it the approver's identity: a user granted
// "<prefix>.approval.answer.<tool>.*.<user>" answers exactly that tool's
// approvals, and only as itself (docs/approvals.md).
func (s Subjects) ApprovalAnswer(tool, id, user string) string {
	return s.Prefix + ".approval.answer." + tool + "." + id + "." + user
}

// ApprovalAnswersWildcard matches every approval answer.
func (s Subjects) ApprovalAnswersWildcard() string { return s.Prefix + ".approval.answer.>" }

// ApprovalOutcome is the core subject where the worker that read an
// answer to approval id says what became of it.
func (s Subjects) ApprovalOutcome(id string) string { return s.Prefix + ".approval.outcome." + id }

// ApprovalsBucket is the KV bucket of approvals, one key per approval id.
func (s Subjects) ApprovalsBucket() string { return s.Prefix + "_approvals" }

// ApprovalsStream is the stream that keeps approval answers until a
// worker reads them (work queue).
func (s Subjects) ApprovalsStream() string { return upper(s.Prefix) + "_APPROVALS" }

// ApprovalsConsumer is the workers' durable consumer of ApprovalsStream.
func (s Subjects) ApprovalsConsumer() string { return "approvers" }

// ResumeHeader is the header of a parked request published again to
// resume it once its approval was decided; its value is the approval id.
const ResumeHeader = "Lionbus-Resume"
