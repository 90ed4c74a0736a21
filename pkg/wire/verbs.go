package wire

// The verbs of the protocol. A request for verb V is a lionbus.V.request
// event on <prefix>.ops.V; its answer is a lionbus.V.result or a
// lionbus.error event.
const (
	VerbCommunicate   = "communicate"
	VerbChat          = "chat"
	VerbChatAndRecord = "chat_and_record"
	VerbOperate       = "operate"
	VerbReact         = "react"
	VerbRun           = "run"
	VerbParse         = "parse"
	VerbInterpret     = "interpret"
	VerbAct           = "act"
	VerbBranchCreate  = "branch.create"
	VerbBranchGet     = "branch.get"
	VerbBranchClear   = "branch.clear"
	VerbBranchClone   = "branch.clone"
	VerbBranchDelete  = "branch.delete"
	VerbBranchHistory = "branch.history"
	VerbBranchImport  = "branch.import"
)

// VerbTypes pairs a verb with its request and result types: Request and
// Result are zero values of them.
type VerbTypes struct {
	Verb    string
	Request any
	Result  any
}

// Verbs returns every verb with a schema of its own, with its request and
// result types (the named operations op.NAME take any object and answer a
// [Result]).
func Verbs() []VerbTypes {
	return []VerbTypes{
		{VerbCommunicate, CommunicateRequest{}, CommunicateResult{}},
		{VerbChat, ChatRequest{}, ChatResult{}},
		{VerbChatAndRecord, ChatAndRecordRequest{}, ChatAndRecordResult{}},
		{VerbOperate, OperateRequest{}, OperateResult{}},
		{VerbReact, ReactRequest{}, ReactResult{}},
		{VerbRun, RunRequest{}, RunResult{}},
		{VerbParse, ParseRequest{}, ParseResult{}},
		{VerbInterpret, InterpretRequest{}, InterpretResult{}},
		{VerbAct, ActRequest{}, ActResult{}},
		{VerbBranchCreate, BranchCreateRequest{}, BranchResult{}},
		{VerbBranchGet, BranchGetRequest{}, BranchResult{}},
		{VerbBranchClear, BranchClearRequest{}, BranchResult{}},
		{VerbBranchClone, BranchCloneRequest{}, BranchResult{}},
		{VerbBranchDelete, BranchDeleteRequest{}, BranchDeleteResult{}},
		{VerbBranchHistory, BranchHistoryRequest{}, BranchHistoryResult{}},
		{VerbBranchImport, BranchImportRequest{}, BranchImportResult{}},
		{VerbBranchFork, BranchForkRequest{}, BranchForkResult{}},
		{VerbBranchForks, BranchForksRequest{}, BranchForksResult{}},
		{VerbBranchList, BranchListRequest{}, BranchListResult{}},
	}
}
