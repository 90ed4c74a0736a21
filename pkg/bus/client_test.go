package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/ops"
)

func TestClient_invalid_options(t *testing.T) {
	t.Parallel()
	b := setupBus(t, bus.Config{})
	tests := []struct {
		name string
		verb string
		opts []bus.SubmitOption
	}{
		{"id with a dot", "communicate", []bus.SubmitOption{bus.WithID("a.b")}},
		{"empty id", "communicate", []bus.SubmitOption{bus.WithID("")}},
		{"id too long", "communicate", []bus.SubmitOption{bus.WithID(strings.Repeat("i", bus.MaxTokenLength+1))}},
		{"wildcard reply subject", "communicate", []bus.SubmitOption{bus.WithReplyTo("app.>")}},
		{"another request's reply subject", "communicate", []bus.SubmitOption{bus.WithID("mine"), bus.WithReplyTo("lion.reply.other")}},
		{"reply subject inside the prefix", "communicate", []bus.SubmitOption{bus.WithReplyTo("lion.history.x")}},
		{"bad traceparent", "communicate", []bus.SubmitOption{bus.WithTraceParent("00-xyz")}},
		{"empty source", "communicate", []bus.SubmitOption{bus.WithSource("")}},
		{"empty verb", "", nil},
		{"verb with a wildcard", "branch.*", nil},
		{"verb with an empty token", "branch..get", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := b.client.Submit(bg(t), tt.verb, "x", nil, tt.opts...); !errors.Is(err, bus.ErrInvalidOption) {
				t.Fatalf("Submit = %v, want ErrInvalidOption", err)
			}
		})
	}
	for _, id := range []string{"", "a.b", "*"} {
		if _, err := b.client.Result(bg(t), id); !errors.Is(err, bus.ErrInvalidOption) {
			t.Errorf("Result(%q) = %v, want ErrInvalidOption", id, err)
		}
		if _, err := b.client.Await(bg(t), id); !errors.Is(err, bus.ErrInvalidOption) {
			t.Errorf("Await(%q) = %v, want ErrInvalidOption", id, err)
		}
		if err := b.client.Cancel(bg(t), id); !errors.Is(err, bus.ErrInvalidOption) {
			t.Errorf("Cancel(%q) = %v, want ErrInvalidOption", id, err)
		}
	}
}

func TestClient_trace_and_ids_are_propagated(t *testing.T) {
	t.Parallel()
	b := setupBus(t, bus.Config{})
	b.startWorker(t, nil, nil, nil, bus.WorkerConfig{})
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	r := b.do(t, "branch.create", "", map[string]any{"branch_id": "traced", "chat_model": "scripted:echo"},
		bus.WithID("create-traced"), bus.WithTraceParent(tp), bus.WithSource("/tests/client"))
	checkSchema(t, r)
	res := mustResult(t, r, nil)
	if res.BranchID != "traced" {
		t.Fatalf("branch id %q", res.BranchID)
	}
	ext := r.Event.Extensions()
	if ext[bus.ExtTraceParent] != tp || ext[bus.ExtRequestID] != "create-traced" {
		t.Fatalf("answer extensions %v: want traceparent %s and requestid create-traced", ext, tp)
	}
}

func TestClient_await_returns_an_answer_stored_before_it_was_called(t *testing.T) {
	t.Parallel()
	b := setupBus(t, bus.Config{})
	b.startWorker(t, nil, nil, nil, bus.WorkerConfig{})
	id, err := b.client.Submit(bg(t), "branch.create", "", map[string]any{"branch_id": "early"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the answer stored", func() bool {
		_, err := b.client.Result(bg(t), id)
		return err == nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := b.client.Await(ctx, id)
	if err != nil {
		t.Fatalf("Await after the answer was stored: %v", err)
	}
	mustResult(t, r, nil)
}

func TestClient_await_default_timeout(t *testing.T) {
	t.Parallel()
	b := setupBus(t, bus.Config{})
	c, err := bus.NewClient(b.nc, bus.ClientConfig{AwaitTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// No worker: nothing ever answers, and the context has no deadline.
	_, err = c.Await(context.Background(), "nobody-answers")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Await = %v, want a deadline error", err)
	}
}

func TestClient_remote_errors_match_sentinels(t *testing.T) {
	t.Parallel()
	b := setupBus(t, bus.Config{})
	b.startWorker(t, nil, nil, nil, bus.WorkerConfig{})
	tests := []struct {
		name   string
		verb   string
		branch string
		data   any
		code   string
		is     error
	}{
		{"unknown branch", "branch.get", "ghost", nil, string(ops.CodeBranchNotFound), ops.ErrBranchNotFound},
		{"bad data", "communicate", "ghost", map[string]any{"instruction": 7}, bus.CodeInvalidData, bus.ErrBadEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := b.do(t, tt.verb, tt.branch, tt.data)
			checkSchema(t, r)
			_, err := r.Result()
			var re *bus.RemoteError
			if !errors.As(err, &re) || re.Code != tt.code {
				t.Fatalf("Result() = %v, want a RemoteError with code %s", err, tt.code)
			}
			if !errors.Is(err, tt.is) {
				t.Fatalf("%v does not match %v", err, tt.is)
			}
		})
	}
	// A second create of one id is branch_exists.
	mustResult(t, b.do(t, "branch.create", "", map[string]any{"branch_id": "once"}), nil)
	r := b.do(t, "branch.create", "", map[string]any{"branch_id": "once"})
	if err := r.Err(); !errors.Is(err, ops.ErrBranchExists) {
		t.Fatalf("second create: %v, want branch_exists", err)
	}
}
