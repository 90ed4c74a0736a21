package history

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/lionbus/lionbus/pkg/ops/internal/jsonval"
)

// MaxRememberedCommits bounds Branch.Commits. When an EventMessages would
// make it larger, the oldest commit (the one with the smallest sequence)
// is forgotten. A request redelivered after more than this many later
// commits on the same branch is no longer recognised by the branch alone; the
// bus's result stream and de-duplication window cover that case.
const MaxRememberedCommits = 1024

// ErrEventOrder is returned by [Branch.Apply] for an event that cannot follow
// the branch's current state: a sequence not above Branch.Seq, an
// EventCreated on a started branch, or another event before EventCreated.
var ErrEventOrder = errors.New("ops: history event out of order")

// Apply folds ev into b. It is pure: it reads nothing but b and ev and
// copies what it keeps, so ev may be reused afterwards.
//
// ev.Seq must be greater than b.Seq (history sequences need not be
// contiguous). An EventMessages whose RequestID is already in b.Commits
// advances Seq but changes nothing else, so a duplicated event never doubles
// messages.
func (b *Branch) Apply(ev Event) error {
	if ev.Seq == 0 || ev.Seq <= b.Seq {
		return fmt.Errorf("%w: event seq %d after branch seq %d", ErrEventOrder, ev.Seq, b.Seq)
	}
	started := b.Seq != 0 && !b.Deleted
	if b.Deleted && ev.Type != EventCreated {
		return fmt.Errorf("%w: %s at seq %d after %s", ErrEventOrder, ev.Type, ev.Seq, EventDeleted)
	}
	if ev.Type == EventCreated && started {
		return fmt.Errorf("%w: %s at seq %d on a started branch", ErrEventOrder, ev.Type, ev.Seq)
	}
	if ev.Type != EventCreated && ev.Type != EventCompacted && !started {
		return fmt.Errorf("%w: %s at seq %d before %s", ErrEventOrder, ev.Type, ev.Seq, EventCreated)
	}
	if ev.BranchID != "" && b.ID != "" && ev.BranchID != b.ID && !b.Deleted {
		return fmt.Errorf("ops: event of branch %q applied to branch %q", ev.BranchID, b.ID)
	}
	switch ev.Type {
	case EventCreated:
		if b.Deleted {
			// The id used again: nothing of the deleted branch is kept.
			*b = Branch{}
		}
		if ev.BranchID != "" {
			b.ID = ev.BranchID
		}
		if ev.Settings != nil {
			b.Settings = cloneSettings(*ev.Settings)
		}
		b.Messages = cloneMessages(ev.Messages)
		b.ModelCalls = ev.ModelCalls
		b.CreatedAt = ev.Time
		if ev.Fork != nil {
			f := *ev.Fork
			b.Fork = &f
		}
	case EventMessages:
		if _, dup := b.Commits.Seq(ev.RequestID); dup && ev.RequestID != "" {
			break
		}
		if ev.Clear {
			b.Messages = systemOnly(b.Messages)
		}
		b.Messages = append(b.Messages, cloneMessages(ev.Messages)...)
		b.ModelCalls += ev.ModelCalls
		if ev.Settings != nil {
			// A run keeps its provider session with its messages.
			b.update(*ev.Settings, ev)
		}
		if ev.RequestID != "" {
			// Not remembered, as checked above: add it without looking again.
			b.Commits = b.Commits.add(Commit{ev.RequestID, ev.Seq}, hashID(ev.RequestID))
		}
	case EventCleared:
		b.Messages = systemOnly(b.Messages)
	case EventUpdated:
		if ev.Settings != nil {
			b.update(*ev.Settings, ev)
		}
	case EventForked, EventApprovalRequested:
		// A record of a fork made of the branch, or of a call parked
		// for an approver: nothing of it changes.
	case EventDeleted:
		*b = Branch{ID: b.ID, Deleted: true, CreatedAt: b.CreatedAt}
	case EventCompacted:
		if err := b.applyCompaction(ev); err != nil {
			return err
		}
		b.Seq = ev.Seq
		return nil
	default:
		return fmt.Errorf("ops: unknown history event type %q at seq %d", ev.Type, ev.Seq)
	}
	if b.Messages == nil {
		b.Messages = []Message{}
	}
	b.Seq = ev.Seq
	b.UpdatedAt = ev.Time
	return nil
}

// Replay folds events, in order, into a new branch. The first event must be
// an EventCreated.
func Replay(events []Event) (*Branch, error) {
	if len(events) == 0 {
		return nil, ErrBranchNotFound
	}
	b := &Branch{}
	for _, ev := range events {
		if err := b.Apply(ev); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// update merges the non-empty fields of s, from ev, into the branch
// settings. A system message it has to add gets an id derived from the
// branch and ev's sequence, so that every fold of the history agrees.
func (b *Branch) update(s Settings, ev Event) {
	if s.System != "" && s.System != b.Settings.System {
		b.Settings.System = s.System
		replaced := false
		for i := range b.Messages {
			if b.Messages[i].Kind == KindSystem {
				b.Messages[i].Content = map[string]any{"system_message": s.System}
				replaced = true
				break
			}
		}
		if !replaced {
			msg := Message{ID: eventScopedID(b.ID, ev.Seq, "system"), Kind: KindSystem, Role: RoleSystem, Content: map[string]any{"system_message": s.System}}
			b.Messages = append([]Message{msg}, b.Messages...)
		}
	}
	if s.ChatModel != nil {
		m := cloneModelRef(*s.ChatModel)
		b.Settings.ChatModel = &m
	}
	if s.ParseModel != nil {
		m := cloneModelRef(*s.ParseModel)
		b.Settings.ParseModel = &m
	}
	if len(s.Tools) > 0 {
		b.Settings.Tools = append([]string(nil), s.Tools...)
	}
	if s.ProviderSession != "" {
		b.Settings.ProviderSession = s.ProviderSession
	}
	if len(s.Notes) > 0 {
		b.Settings.Notes = jsonval.CopyMap(s.Notes)
	}
	if len(s.Metadata) > 0 {
		b.Settings.Metadata = jsonval.CopyMap(s.Metadata)
	}
}

func systemOnly(msgs []Message) []Message {
	out := make([]Message, 0, 1)
	for _, m := range msgs {
		if m.Kind == KindSystem {
			out = append(out, m)
		}
	}
	return out
}

// eventScopedID returns the id of something a history event of branchID at
// seq creates while it is folded (what names it within the event): a
// UUID (version 5) derived from those, so that every fold of the same
// history gives the same id.
func eventScopedID(branchID string, seq uint64, what string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(fmt.Sprintf("urn:lionbus:event:%s/%d/%s", branchID, seq, what))).String()
}
