package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

func TestClient_invalid_options(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	tests := []struct {
		name string
		verb string
		opts []client.SubmitOption
	}{
		{"id with a dot", "communicate", []client.SubmitOption{client.WithID("a.b")}},
		{"empty id", "communicate", []client.SubmitOption{client.WithID("")}},
		{"id too long", "communicate", []client.SubmitOption{client.WithID(strings.Repeat("i", protocol.MaxTokenLength+1))}},
		{"wildcard reply subject", "communicate", []client.SubmitOption{client.WithReplyTo("app.>")}},
		{"another request's reply subject", "communicate", []client.SubmitOption{client.WithID("mine"), client.WithReplyTo("lion.reply.other")}},
		{"reply subject inside the prefix", "communicate", []client.SubmitOption{client.WithReplyTo("lion.history.x")}},
		{"bad traceparent", "communicate", []client.SubmitOption{client.WithTraceParent("00-xyz")}},
		{"empty source", "communicate", []client.SubmitOption{client.WithSource("")}},
		{"empty verb", "", nil},
		{"verb with a wildcard", "branch.*", nil},
		{"verb with an empty token", "branch..get", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := b.Client.Submit(bustest.Ctx(t), tt.verb, "x", nil, tt.opts...); !errors.Is(err, client.ErrInvalidOption) {
				t.Fatalf("Submit = %v, want ErrInvalidOption", err)
			}
		})
	}
	for _, p := range []string{"lionbus.>", "lionbus..api", "lionbus.api.", "$"} {
		if _, err := client.New(b.NC, client.Config{APIPrefix: p}); !errors.Is(err, client.ErrInvalidOption) {
			t.Errorf("New with APIPrefix %q = %v, want ErrInvalidOption", p, err)
		}
	}
	for _, p := range []string{"lionbus.api", "$JS.hub.API"} {
		if _, err := client.New(b.NC, client.Config{APIPrefix: p}); err != nil {
			t.Errorf("New with APIPrefix %q = %v", p, err)
		}
	}
	for _, id := range []string{"", "a.b", "*"} {
		if _, err := b.Client.Result(bustest.Ctx(t), id); !errors.Is(err, client.ErrInvalidOption) {
			t.Errorf("Result(%q) = %v, want ErrInvalidOption", id, err)
		}
		if _, err := b.Client.Await(bustest.Ctx(t), id); !errors.Is(err, client.ErrInvalidOption) {
			t.Errorf("Await(%q) = %v, want ErrInvalidOption", id, err)
		}
		if err := b.Client.Cancel(bustest.Ctx(t), id); !errors.Is(err, client.ErrInvalidOption) {
			t.Errorf("Cancel(%q) = %v, want ErrInvalidOption", id, err)
		}
	}
}

func TestClient_trace_and_ids_are_propagated(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	r := b.Do(t, "branch.create", "", map[string]any{"branch_id": "traced", "chat_model": "scripted:echo"},
		client.WithID("create-traced"), client.WithTraceParent(tp), client.WithSource("/tests/client"))
	bustest.CheckSchema(t, r)
	res := bustest.MustResult(t, r, nil)
	if res.BranchID != "traced" {
		t.Fatalf("branch id %q", res.BranchID)
	}
	ext := r.Event.Extensions()
	if ext[protocol.ExtTraceParent] != tp || ext[protocol.ExtRequestID] != "create-traced" {
		t.Fatalf("answer extensions %v: want traceparent %s and requestid create-traced", ext, tp)
	}
}

func TestClient_await_returns_an_answer_stored_before_it_was_called(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	id, err := b.Client.Submit(bustest.Ctx(t), "branch.create", "", map[string]any{"branch_id": "early"})
	if err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 10*time.Second, "the answer stored", func() bool {
		_, err := b.Client.Result(bustest.Ctx(t), id)
		return err == nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := b.Client.Await(ctx, id)
	if err != nil {
		t.Fatalf("Await after the answer was stored: %v", err)
	}
	bustest.MustResult(t, r, nil)
}

func TestClient_await_default_timeout(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	c, err := client.New(b.NC, client.Config{AwaitTimeout: 100 * time.Millisecond})
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
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	tests := []struct {
		name   string
		verb   string
		branch string
		data   any
		code   ops.Code
		is     error
	}{
		{"unknown branch", "branch.get", "ghost", nil, ops.CodeBranchNotFound, history.ErrBranchNotFound},
		{"bad data", "communicate", "ghost", map[string]any{"instruction": 7}, protocol.CodeInvalidData, protocol.ErrBadEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := b.Do(t, tt.verb, tt.branch, tt.data)
			bustest.CheckSchema(t, r)
			_, err := r.Result()
			var re *client.RemoteError
			if !errors.As(err, &re) || re.Code != tt.code {
				t.Fatalf("Result() = %v, want a RemoteError with code %s", err, tt.code)
			}
			if !errors.Is(err, tt.is) {
				t.Fatalf("%v does not match %v", err, tt.is)
			}
		})
	}
	// A second create of one id is branch_exists.
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{"branch_id": "once"}), nil)
	r := b.Do(t, "branch.create", "", map[string]any{"branch_id": "once"})
	if err := r.Err(); !errors.Is(err, history.ErrBranchExists) {
		t.Fatalf("second create: %v, want branch_exists", err)
	}
}

// A client keeps the stream handles it looked up. When the results stream
// stops allowing direct gets after that (edited by hand, or re-created by
// an older deployment), the cached handle's read finds no responders: the
// client looks the stream up again and reads the answer all the same.
func TestClient_result_after_the_stream_stopped_allowing_direct_gets(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	b.StartWorker(t, nil, nil, nil, worker.Config{})
	const id = "create-direct"
	bustest.MustResult(t, b.Do(t, "branch.create", "", map[string]any{"branch_id": "direct"}, client.WithID(id)), nil)
	// The answer reaches its subscriber as the results stream takes it:
	// the stored copy may be readable a moment later.
	var err error
	for range 200 {
		if _, err = b.Client.Result(bustest.Ctx(t), id); !errors.Is(err, client.ErrNoResult) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("Result with direct gets allowed: %v", err)
	}
	ctx := bustest.Ctx(t)
	cfg := b.Res.Results.CachedInfo().Config
	cfg.AllowDirect = false
	if _, err := b.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	got, err := b.Client.Result(ctx, id)
	if err != nil {
		t.Fatalf("Result after direct gets were turned off: %v", err)
	}
	bustest.MustResult(t, got, nil)
}
