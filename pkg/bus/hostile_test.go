package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/ops"
)

// deepSchema is a response_format nested depth levels deep
// ({"type":"array","items":{...}}), the shape that compiled in exponential
// memory before schemas were bounded.
func deepSchema(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat(`{"type":"array","items":`, depth) + `{"type":"string"}` + strings.Repeat("}", depth))
}

// Sixteen requests carrying a 2,000-deep response_format (about 50 KB
// each) are each refused with invalid_request naming the bound, without a
// model call, and a normal request sent after them is answered.
func TestHostile_deep_schemas_are_refused_and_do_not_starve_others(t *testing.T) {
	t.Parallel()
	b := bustest.New(t, provision.Config{})
	model := countCalls(echo{})
	b.StartWorker(t, nil, nil, map[string]ops.Provider{"count": model}, worker.Config{})
	b.Do(t, "branch.create", "", map[string]any{"branch_id": "h", "chat_model": "count:x"})
	schema := deepSchema(2000)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := b.Client.Do(ctx, "communicate", "h", map[string]any{"instruction": "x", "response_format": schema})
			if err != nil {
				errs <- err
				return
			}
			errs <- r.Err()
		}()
	}
	normal, err := b.Client.Do(ctx, "communicate", "h", map[string]any{"instruction": "still served"})
	if err != nil || normal.Err() != nil {
		t.Fatalf("the normal request: %v %v", err, normal.Err())
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		var re *client.RemoteError
		if !errors.As(err, &re) || re.Code != ops.CodeInvalidRequest || !strings.Contains(re.Message, "nesting") && !strings.Contains(re.Message, "deep") {
			t.Fatalf("a deep schema was answered %v, want invalid_request naming the bound", err)
		}
	}
	if n := model.total(); n != 1 {
		t.Fatalf("%d model calls, want 1 (the normal request only)", n)
	}
}
