package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// deadlineAnswer is the AnswerID of a decision its deadline took.
const deadlineAnswer = "deadline"

// Serve reads answers from the answers stream (a durable consumer all
// workers share: each answer reaches one) and sweeps the bucket for
// passed deadlines at once and every Sweep, until ctx ends. It returns
// when both have stopped.
func (a *Approvals) Serve(ctx context.Context) error {
	cons, err := a.st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: a.subj.ApprovalsConsumer(), AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: 30 * time.Second, MaxAckPending: 64,
	})
	if err != nil {
		return fmt.Errorf("tools: approvals consumer: %w", err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { a.handleAnswer(ctx, m) }, jetstream.PullMaxMessages(16))
	if err != nil {
		return fmt.Errorf("tools: approvals consumer: %w", err)
	}
	defer cc.Stop()
	t := time.NewTicker(a.cfg.Sweep)
	defer t.Stop()
	for {
		a.Sweep(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// handleAnswer applies one answer message and says what became of it on
// the outcome subject. An answer that could not be applied for a passing
// reason (JetStream unavailable) is handed back.
func (a *Approvals) handleAnswer(ctx context.Context, m jetstream.Msg) {
	out, err := a.answer(ctx, m.Subject(), m.Headers(), m.Data())
	if err != nil {
		a.log.Warn().Err(err).Str("subject", m.Subject()).Msg("approval answer not applied; it will be read again")
		_ = m.NakWithDelay(time.Second)
		return
	}
	if !out.Accepted {
		a.log.Info().Str("approval", out.ApprovalID).Str("answer", out.AnswerID).Str("code", string(out.Code)).Msg(out.Message)
	}
	if raw, err := json.Marshal(out); err == nil && out.ApprovalID != "" {
		if msg, err := encodeMsg(a.subj.ApprovalOutcome(out.ApprovalID), a.cfg.Source, wire.ApprovalOutcomeType, "", json.RawMessage(raw)); err == nil {
			_ = a.nc.PublishMsg(msg)
		}
	}
	_ = m.Ack()
}

// refuse is the outcome of a refused answer.
func refuse(id, answer string, code wire.Code, format string, args ...any) wire.ApprovalOutcome {
	return wire.ApprovalOutcome{ApprovalID: id, AnswerID: answer, Code: code, Message: fmt.Sprintf(format, args...)}
}

// answer applies the answer published on subject. Its error is for
// passing failures only; a refused answer is an outcome.
func (a *Approvals) answer(ctx context.Context, subject string, h map[string][]string, body []byte) (wire.ApprovalOutcome, error) {
	rest, _ := strings.CutPrefix(subject, a.subj.Prefix+".approval.answer.")
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return refuse("", "", wire.CodeApprovalInvalid, "subject %s is not %s", subject, a.subj.ApprovalAnswer("<tool>", "<id>", "<user>")), nil
	}
	tool, id, user := parts[0], parts[1], parts[2]
	ev, data, err := readAnswer(h, body)
	answerID := ""
	if ev != nil {
		answerID = ev.ID()
	}
	if err != nil {
		return refuse(id, answerID, wire.CodeApprovalInvalid, "answer to approval %s: %v", id, err), nil
	}
	for {
		r, rev, err := a.get(ctx, id)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			return refuse(id, answerID, wire.CodeApprovalNotFound, "no approval %s", id), nil
		case err != nil:
			return wire.ApprovalOutcome{}, err
		case r.Tool != tool:
			return refuse(id, answerID, wire.CodeApprovalNotFound, "approval %s is of tool %s, not %s", id, r.Tool, tool), nil
		case r.State != wire.ApprovalPending:
			if r.Decision != nil && r.Decision.AnswerID == answerID {
				// This very answer decided it (read again after a
				// failure): finish its work.
				return wire.ApprovalOutcome{ApprovalID: id, AnswerID: answerID, Accepted: true, State: r.State}, a.resume(ctx, r, rev)
			}
			by := "its deadline"
			if r.Decision != nil && r.Decision.AnswerID != deadlineAnswer {
				by = fmt.Sprintf("answer %s of %s", r.Decision.AnswerID, r.Decision.By.User)
			}
			return refuse(id, answerID, wire.CodeApprovalAnswered, "approval %s was decided (%s) by %s", id, r.State, by), nil
		case data.ArgumentsDigest != r.ArgumentsDigest:
			return refuse(id, answerID, wire.CodeApprovalDigestMismatch, "answer names arguments digest %q; approval %s is for %s", wire.Truncate(data.ArgumentsDigest, 80), id, r.ArgumentsDigest), nil
		}
		d := &wire.ApprovalDecision{Reason: wire.Truncate(data.Reason, 1024), By: wire.Approver{Source: ev.Source(), User: user}, AnswerID: answerID, At: a.cfg.Now().UTC()}
		switch data.Decision {
		case wire.DecisionApprove:
			d.Allow = true
			r.State = wire.ApprovalApproved
			if data.Arguments != nil {
				d.Arguments, d.ArgumentsDigest = data.Arguments, wire.ArgumentsDigest(data.Arguments)
			}
		case wire.DecisionDeny:
			r.State = wire.ApprovalDenied
		default:
			return refuse(id, answerID, wire.CodeApprovalInvalid, "decision %q: want %q or %q", wire.Truncate(data.Decision, 40), wire.DecisionApprove, wire.DecisionDeny), nil
		}
		r.Decision = d
		rev, err = a.update(ctx, r, rev)
		if errors.Is(err, jetstream.ErrKeyExists) {
			continue // decided or kept meanwhile: read again
		}
		if err != nil {
			return wire.ApprovalOutcome{}, err
		}
		return wire.ApprovalOutcome{ApprovalID: id, AnswerID: answerID, Accepted: true, State: r.State}, a.resume(ctx, r, rev)
	}
}

// readAnswer decodes a lionbus.approval.answer event (structured or
// binary).
func readAnswer(h map[string][]string, body []byte) (*event.Event, wire.ApprovalAnswer, error) {
	var data wire.ApprovalAnswer
	codec, _ := protocol.NewCodec(protocol.CodecConfig{MaxPayload: MaxApprovalAnswerBytes})
	ev, err := codec.DecodeEvent(h, body)
	if err != nil {
		return nil, data, err
	}
	if ev.Type() != wire.ApprovalAnswerType {
		return ev, data, fmt.Errorf("type is %s, want %s", wire.Truncate(ev.Type(), 80), wire.ApprovalAnswerType)
	}
	if err := json.Unmarshal(ev.Data(), &data); err != nil {
		return ev, data, fmt.Errorf("data: %w", err)
	}
	return ev, data, nil
}

// Sweep decides the pending approvals whose deadline passed (as
// OnDeadline says), resumes decided ones whose resume was not published
// (a worker died between), and deletes decided, resumed ones older than
// Retain. Workers sweep concurrently: each change is a compare-and-set on
// the record's revision, and a resume's message id makes it published
// once.
func (a *Approvals) Sweep(ctx context.Context) {
	lister, err := a.kv.ListKeys(ctx)
	if err != nil {
		if !errors.Is(err, jetstream.ErrNoKeysFound) && ctx.Err() == nil {
			a.log.Debug().Err(err).Msg("approvals sweep")
		}
		return
	}
	defer func() { _ = lister.Stop() }()
	now := a.cfg.Now()
	for key := range lister.Keys() {
		if ctx.Err() != nil {
			return
		}
		r, rev, err := a.get(ctx, key)
		if err != nil {
			continue
		}
		switch {
		case r.State == wire.ApprovalPending && !now.Before(r.Deadline) && r.Request != nil:
			a.expire(ctx, r, rev)
		case r.State != wire.ApprovalPending && !r.Resumed && r.Decision != nil && now.Sub(r.Decision.At) > a.cfg.Sweep:
			if err := a.resume(ctx, r, rev); err != nil {
				a.log.Warn().Err(err).Str("approval", r.ID).Msg("approvals sweep")
			}
		case r.Resumed && r.Decision != nil && now.Sub(r.Decision.At) > a.cfg.Retain:
			_ = a.kv.Delete(ctx, key, jetstream.LastRevision(rev))
		}
	}
}

// expire has the deadline decide r.
func (a *Approvals) expire(ctx context.Context, r *approvalRecord, rev uint64) {
	allow := r.OnDeadline == DeadlineApprove
	r.State = wire.ApprovalDenied
	if allow {
		r.State = wire.ApprovalApproved
	}
	r.Decision = &wire.ApprovalDecision{Allow: allow, AnswerID: deadlineAnswer, At: a.cfg.Now().UTC(),
		Reason: fmt.Sprintf("no answer by the deadline %s", r.Deadline.UTC().Format(time.RFC3339))}
	rev, err := a.update(ctx, r, rev)
	if err != nil {
		return // another worker decided it, or it was answered meanwhile
	}
	a.log.Info().Str("approval", r.ID).Str("state", r.State).Msg("approval decided by its deadline")
	if err := a.resume(ctx, r, rev); err != nil {
		a.log.Warn().Err(err).Str("approval", r.ID).Msg("approvals sweep")
	}
}
