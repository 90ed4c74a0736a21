package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Bounds of a batch (docs/bounds.md).
const (
	// MaxBatchIDLength bounds a batch id, so that the ids derived from it
	// (an item's request and branch ids) stay within MaxIDLength.
	MaxBatchIDLength = 64
	// MaxBatchItems bounds the items of one batch.
	MaxBatchItems = 1_000_000
	// MaxBatchLineBytes bounds one line of a batch's input.
	MaxBatchLineBytes = 1 << 20
	// MaxCustomIDLength bounds an item's custom_id.
	MaxCustomIDLength = 512
	// DefaultBatchConcurrency is a batch's items in flight when it names
	// none.
	DefaultBatchConcurrency = 32
	// MaxBatchConcurrency bounds a batch's items in flight.
	MaxBatchConcurrency = 10_000
)

// Batch states ([Batch].State). A batch is "running" until every item
// has finished, then "completed"; "canceling" while a cancel stops its
// items, then "canceled"; "expired" when its deadline passed before every
// item started. A retry puts an ended batch back to "running".
const (
	BatchRunning   = "running"
	BatchCanceling = "canceling"
	BatchCanceled  = "canceled"
	BatchCompleted = "completed"
	BatchExpired   = "expired"
)

// Item statuses ([BatchResult].Status, and the counts of [BatchCounts]).
const (
	ItemQueued    = "queued"
	ItemRunning   = "running"
	ItemSucceeded = "succeeded"
	ItemFailed    = "failed"
	ItemCanceled  = "canceled"
	ItemExpired   = "expired"
)

// What a batch does with an item's branch once its result is stored
// ([Batch].Branches).
const (
	BranchesDelete = "delete"
	BranchesKeep   = "keep"
)

// CodeCostCeiling is the error code of an item a batch did not start
// because its cost ceiling ([Batch].MaxCostUSD) was reached.
const CodeCostCeiling = "cost_ceiling"

// ErrBadBatchLine is matched (errors.Is) by every error of
// [ParseBatchLine].
var ErrBadBatchLine = errors.New("wire: bad batch line")

// BatchCounts are a batch's items by state. They always add up to Total.
type BatchCounts struct {
	Total     int `json:"total"`
	Queued    int `json:"queued"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Canceled  int `json:"canceled"`
	Expired   int `json:"expired"`
}

// Sum is the sum of the counts per state: Total when they are right.
func (c BatchCounts) Sum() int {
	return c.Queued + c.Running + c.Succeeded + c.Failed + c.Canceled + c.Expired
}

// Finished is the number of items that ended (succeeded, failed,
// canceled or expired).
func (c BatchCounts) Finished() int { return c.Succeeded + c.Failed + c.Canceled + c.Expired }

// Batch is a batch's record: the value of key <batch id> in the batches
// bucket, JSON. The submitter writes the first fields once; the driving
// worker keeps State, Counts, Owner and OwnerUntil current (at most every
// half second); cancel and retry change State, Round and RetryStatuses.
type Batch struct {
	// ID is the batch id: 1 to MaxBatchIDLength characters of
	// [A-Za-z0-9_-].
	ID string `json:"id"`
	// Input is the name of the object holding the batch's JSONL input
	// in the batch input object store.
	Input string `json:"input"`
	// Total is the number of items (lines) of the input.
	Total int `json:"total"`
	// TemplateBranch, when set, is the branch each item's branch is
	// cloned from (its system message, tools and models); "" means each
	// item starts on an empty branch of its own.
	TemplateBranch string `json:"template_branch,omitempty"`
	// Concurrency is the most items of the batch in flight at once, over
	// the whole fleet.
	Concurrency int `json:"concurrency"`
	// Deadline, when set, is when the items not yet started expire; the
	// items in flight carry it as their requests' deadline.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Branches is BranchesDelete (the default) or BranchesKeep.
	Branches string `json:"branches,omitempty"`
	// Metadata is the submitter's, kept as it is.
	Metadata map[string]string `json:"metadata,omitempty"`
	// MaxCostUSD, when above 0, is the batch's cost ceiling: once what its
	// finished items cost (Usage.CostUSD) reaches it, no new item starts;
	// those not started are recorded canceled with code
	// CodeCostCeiling. The items in flight at that moment finish, so the
	// cost may pass the ceiling by what they cost (at most Concurrency
	// items). It may be changed while the batch runs.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// Created is when the batch was submitted.
	Created time.Time `json:"created"`

	// State is one of the Batch* states.
	State string `json:"state"`
	// Round is 1 for the first run of the items, one more per retry.
	Round int `json:"round"`
	// RetryStatuses are the statuses the last retry ran again.
	RetryStatuses []string `json:"retry_statuses,omitempty"`
	// Counts are the items by state, as of Updated.
	Counts BatchCounts `json:"counts"`
	// Usage is the token usage and cost of the batch's finished items
	// over every round, as of Updated: the sum of their results'
	// TotalUsage.
	Usage Usage `json:"usage"`
	// CostCeilingReached is set once the batch's cost reached MaxCostUSD
	// and items were left unstarted because of it.
	CostCeilingReached bool `json:"cost_ceiling_reached,omitempty"`
	// Owner is the worker driving the batch, and OwnerUntil when another
	// may take it over unless Owner renews it.
	Owner      string    `json:"owner,omitempty"`
	OwnerUntil time.Time `json:"owner_until,omitzero"`
	// Updated is when the record was last written.
	Updated time.Time `json:"updated"`
	// Ended is when the batch reached a final state.
	Ended *time.Time `json:"ended,omitempty"`
}

// BatchFinal reports whether state is one a batch rests in (completed,
// canceled, expired).
func BatchFinal(state string) bool {
	return state == BatchCompleted || state == BatchCanceled || state == BatchExpired
}

// BatchError is the error of a failed, canceled or expired item.
type BatchError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// BatchResult is the record of one finished item, JSON, on the subject
// <prefix>.batch.result.<batch id>.<item key> of the batch results
// stream: the stream keeps the last per item, in completion order.
type BatchResult struct {
	CustomID string `json:"custom_id"`
	// Status is ItemSucceeded, ItemFailed, ItemCanceled or ItemExpired.
	Status string `json:"status"`
	// Round is the batch's round the item ran in.
	Round int `json:"round"`
	// RequestID is the id of the item's request, BranchID its branch.
	RequestID string `json:"request_id"`
	BranchID  string `json:"branch_id,omitempty"`
	// Result is the data of the request's result (succeeded only).
	Result *Result `json:"result,omitempty"`
	// Error is why the item did not succeed.
	Error *BatchError `json:"error,omitempty"`
	// Usage is the request's token usage and cost in this round, if any.
	Usage *Usage `json:"usage,omitempty"`
	// TotalUsage is the item's usage over every round it ran in, this one
	// included: what it adds to its batch's Usage.
	TotalUsage *Usage `json:"total_usage,omitempty"`
	// Finished is when the record was written.
	Finished time.Time `json:"finished"`
	// Seq is the record's sequence in the results stream: the position to
	// read on from. It is set by readers, not stored.
	Seq uint64 `json:"-"`
}

// BatchItem is one line of a batch's input: {"custom_id", "verb", "data"},
// or the OpenAI Batch input shape {"custom_id", "method": "POST", "url":
// "/v1/chat/completions", "body": {...}} mapped onto chat (see
// [ParseBatchLine]).
type BatchItem struct {
	CustomID string          `json:"custom_id"`
	Verb     string          `json:"verb"`
	Data     json.RawMessage `json:"data"`
}

// BatchItemKey is the key of the item custom_id: 24 hex digits of its
// SHA-256, a subject token whatever custom_id holds.
func BatchItemKey(customID string) string {
	sum := sha256.Sum256([]byte(customID))
	return hex.EncodeToString(sum[:12])
}

// BatchRequestID is the request id (and the branch id) of the item with
// key itemKey in round round of batch batchID:
// "<batch id>-<item key>-<round>". Every worker derives the same, so a
// request sent again is stored and run once.
func BatchRequestID(batchID, itemKey string, round int) string {
	return batchID + "-" + itemKey + "-" + strconv.Itoa(round)
}

// ValidBatchID reports whether id is a usable batch id.
func ValidBatchID(id string) bool { return len(id) <= MaxBatchIDLength && ValidID(id) }

// batchVerbs are the verbs a batch item may name: those that act on a
// branch and answer once.
var batchVerbs = map[string]bool{
	VerbChat: true, VerbChatAndRecord: true, VerbCommunicate: true, VerbOperate: true,
	VerbParse: true, VerbInterpret: true, VerbReact: true, VerbAct: true, VerbRun: true,
}

// openAILine is the OpenAI Batch input shape.
type openAILine struct {
	CustomID string          `json:"custom_id"`
	Verb     string          `json:"verb"`
	Data     json.RawMessage `json:"data"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// openAIBody is the part of a Chat Completions body the mapping reads.
type openAIBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
}

// openAIOptions are the body fields passed on as model options.
var openAIOptions = []string{"temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop",
	"presence_penalty", "frequency_penalty", "response_format", "n", "logit_bias", "user", "reasoning_effort"}

// ParseBatchLine decodes one line of a batch's input. A line in the OpenAI
// Batch shape (method POST, url /v1/chat/completions) becomes a chat: the
// last user message is the instruction, the system messages the guidance,
// the messages between them the context ("role: content" each); the model
// is the chat model ("openai:MODEL", or MODEL itself when it already names
// a provider, "scripted:echo"), with the sampling fields of the body as
// its options. Errors match ErrBadBatchLine.
func ParseBatchLine(line []byte) (BatchItem, error) {
	var l openAILine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return BatchItem{}, fmt.Errorf("%w: %v", ErrBadBatchLine, err)
	}
	if l.CustomID == "" {
		return BatchItem{}, fmt.Errorf("%w: custom_id is missing", ErrBadBatchLine)
	}
	if len(l.CustomID) > MaxCustomIDLength {
		return BatchItem{}, fmt.Errorf("%w: custom_id is %d bytes, at most %d", ErrBadBatchLine, len(l.CustomID), MaxCustomIDLength)
	}
	if l.Body != nil || l.URL != "" || l.Method != "" {
		if l.Verb != "" || l.Data != nil {
			return BatchItem{}, fmt.Errorf("%w: a line has either verb and data or method, url and body", ErrBadBatchLine)
		}
		data, err := openAIChat(l)
		if err != nil {
			return BatchItem{}, err
		}
		return BatchItem{CustomID: l.CustomID, Verb: VerbChat, Data: data}, nil
	}
	if !batchVerbs[l.Verb] {
		return BatchItem{}, fmt.Errorf("%w: verb %q cannot be batched (want one of chat, chat_and_record, communicate, operate, parse, interpret, react, act, run)", ErrBadBatchLine, l.Verb)
	}
	if len(bytes.TrimSpace(l.Data)) == 0 || l.Data[0] != '{' {
		return BatchItem{}, fmt.Errorf("%w: data must be a JSON object", ErrBadBatchLine)
	}
	return BatchItem{CustomID: l.CustomID, Verb: l.Verb, Data: l.Data}, nil
}

func openAIChat(l openAILine) (json.RawMessage, error) {
	if l.Method != "POST" || l.URL != "/v1/chat/completions" {
		return nil, fmt.Errorf("%w: method %q url %q: only POST /v1/chat/completions is served", ErrBadBatchLine, l.Method, l.URL)
	}
	var body openAIBody
	if err := json.Unmarshal(l.Body, &body); err != nil {
		return nil, fmt.Errorf("%w: body: %v", ErrBadBatchLine, err)
	}
	var opts map[string]json.RawMessage
	_ = json.Unmarshal(l.Body, &opts)
	if body.Model == "" {
		return nil, fmt.Errorf("%w: body.model is missing", ErrBadBatchLine)
	}
	last := -1
	for i, m := range body.Messages {
		if m.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		return nil, fmt.Errorf("%w: body.messages has no user message", ErrBadBatchLine)
	}
	var system, context []string
	for i, m := range body.Messages {
		text := contentText(m.Content)
		switch {
		case i == last:
		case m.Role == "system" || m.Role == "developer":
			system = append(system, text)
		default:
			context = append(context, m.Role+": "+text)
		}
	}
	model := map[string]any{}
	if p, name, ok := strings.Cut(body.Model, ":"); ok && p != "" && name != "" {
		model["provider"], model["model"] = p, name
	} else {
		model["provider"], model["model"] = "openai", body.Model
	}
	for _, k := range openAIOptions {
		if v, ok := opts[k]; ok {
			model[k] = v
		}
	}
	data := map[string]any{"instruction": contentText(body.Messages[last].Content), "chat_model": model}
	if len(system) > 0 {
		data["guidance"] = strings.Join(system, "\n\n")
	}
	if len(context) > 0 {
		data["context"] = context
	}
	return json.Marshal(data)
}

// contentText is a message content as text: a string, or the text parts
// of a list of parts joined.
func contentText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, p := range v {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	b, _ := json.Marshal(c)
	return string(b)
}
