package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

// blockingProvider blocks every call until its context ends, after
// closing started.
type blockingProvider struct{ started chan struct{} }

func (p blockingProvider) Complete(ctx context.Context, _ ops.Call) (*ops.Completion, error) {
	close(p.started)
	<-ctx.Done()
	return nil, ctx.Err()
}

// 0021-D4-05: exactly one terminal signal per request. A request whose
// worker stops under it (its context cancelled, not by the client) is
// delivered again: that attempt emits no terminal signal, unless it was
// the last allowed; a client's cancel ends the request with run.failed.
func TestEngine_stopped_attempt_emits_no_terminal_signal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cause    error
		last     bool
		wantTerm bool
	}{
		{"worker stops, deliveries left", nil, false, false},
		{"worker stops on the last delivery", nil, true, true},
		{"client cancels", ops.ErrCanceledByClient, false, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{})
			rec := &signalRecorder{}
			eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore(), Signals: rec,
				Providers: ops.NewProviders(map[string]ops.Provider{"block": blockingProvider{started}})})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := eng.Do(context.Background(), ops.Request{ID: "c", Verb: "branch.create", BranchID: "b",
				Data: json.RawMessage(`{"chat_model":"block:x"}`)}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			go func() { <-started; cancel(tt.cause) }()
			id := fmt.Sprint("r", i)
			_, err = eng.Do(ctx, ops.Request{ID: id, Verb: "communicate", BranchID: "b", LastAttempt: tt.last,
				Data: json.RawMessage(`{"instruction":"hi"}`)})
			if code(err) != ops.CodeCanceled {
				t.Fatalf("err = %v, want canceled", err)
			}
			got := rec.types(id)
			term := slices.Contains(got, string(ops.SignalRunFailed)) || slices.Contains(got, string(ops.SignalRunEnd))
			if got[0] != string(ops.SignalRunStart) || term != tt.wantTerm {
				t.Fatalf("signals %v, want a terminal one: %v", got, tt.wantTerm)
			}
		})
	}
}
