package tracing

import (
	"context"
	"errors"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Store wraps an ops.Store with a span per operation ("lionbus.store.load",
// ".create", ".append", ".history", ".delete"). A branch that does not
// exist, or an event already committed, is an answer, not a failed span.
func Store(st history.Store, tr trace.Tracer) history.Store { return &tracedStore{st: st, tr: tr} }

type tracedStore struct {
	st history.Store
	tr trace.Tracer
}

func (s *tracedStore) start(ctx context.Context, op, branch string) (context.Context, func(error)) {
	ctx, span := s.tr.Start(ctx, "lionbus.store."+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(AttrBranchID.String(branch)))
	return ctx, func(err error) {
		if err != nil && !errors.Is(err, history.ErrBranchNotFound) && !errors.Is(err, history.ErrBranchExists) && !errors.Is(err, history.ErrAlreadyCommitted) {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

func (s *tracedStore) Load(ctx context.Context, branchID string) (*history.Branch, error) {
	ctx, end := s.start(ctx, "load", branchID)
	b, err := s.st.Load(ctx, branchID)
	end(err)
	return b, err
}

func (s *tracedStore) Create(ctx context.Context, branchID string, ev history.Event) (*history.Branch, error) {
	ctx, end := s.start(ctx, "create", branchID)
	b, err := s.st.Create(ctx, branchID, ev)
	end(err)
	return b, err
}

func (s *tracedStore) Append(ctx context.Context, branchID string, ev history.Event) (*history.Branch, error) {
	ctx, end := s.start(ctx, "append", branchID)
	b, err := s.st.Append(ctx, branchID, ev)
	end(err)
	return b, err
}

func (s *tracedStore) History(ctx context.Context, branchID string, after uint64, limit int) ([]history.Event, error) {
	ctx, end := s.start(ctx, "history", branchID)
	evs, err := s.st.History(ctx, branchID, after, limit)
	end(err)
	return evs, err
}

func (s *tracedStore) Delete(ctx context.Context, branchID string) error {
	ctx, end := s.start(ctx, "delete", branchID)
	err := s.st.Delete(ctx, branchID)
	end(err)
	return err
}

// Branches lists the branches of the traced store, when it is a
// [history.Lister].
func (s *tracedStore) Branches(ctx context.Context, after string, limit int) ([]history.Summary, bool, error) {
	ctx, end := s.start(ctx, "branches", "")
	list, more, err := history.ListBranches(ctx, s.st, after, limit)
	end(err)
	return list, more, err
}
