package ops_test

// The Middle bullets of ADR-0021 D5 through operate: the middle runs once
// per request, and what is recorded is the middle's doing alone.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
)

// innerExchanges is a middle that performs a bounded series of recorded
// inner exchanges (chat_and_record through the engine) and counts its
// calls.
type innerExchanges struct {
	mu    sync.Mutex
	eng   *ops.Engine
	calls int
}

func (m *innerExchanges) Exchange(ctx context.Context, in ops.MiddleInput) (*ops.MiddleResult, error) {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	var last *ops.Result
	for i, ins := range []string{"inner one", "inner two"} {
		data, _ := json.Marshal(map[string]any{"instruction": ins})
		res, err := m.eng.Do(ctx, ops.Request{ID: fmt.Sprintf("%s/%d", in.RequestID, i), Verb: "chat_and_record", BranchID: in.BranchID, Data: data})
		if err != nil {
			return nil, err
		}
		last = res
	}
	return middleValue(string(last.Value))
}

// 0021-D5-01, 0021-D5-02: operate calls the selected middle once per
// request, whatever the middle does inside (nothing recorded, one model
// call, or several recorded inner exchanges); only the middle clears and
// records messages: operate appends no instruction or response of its own
// around it, and clear_messages is left to the middle.
func TestOperate_0021_D5_01_02_the_middle_owns_the_exchange(t *testing.T) {
	tests := []struct {
		name       string
		middle     string // "" for the default (communicate)
		clear      bool
		wantValue  string
		wantMsgs   []string // the branch's messages afterwards, system left out
		wantCalls  int      // model calls
		wantMiddle int      // calls of the fixed or inner middle
	}{
		{name: "a middle that records nothing", middle: "fixed", wantValue: `"fixed"`,
			wantMsgs: []string{"instruction:seed", "assistant_response:seed"}, wantMiddle: 1},
		{name: "clearing is the middle's: one that does not clear", middle: "fixed", clear: true, wantValue: `"fixed"`,
			wantMsgs: []string{"instruction:seed", "assistant_response:seed"}, wantMiddle: 1},
		{name: "the communicate middle records one exchange", wantValue: `"work"`,
			wantMsgs:  []string{"instruction:seed", "assistant_response:seed", "instruction:work", "assistant_response:work"},
			wantCalls: 1},
		{name: "the communicate middle clears", clear: true, wantValue: `"work"`,
			wantMsgs: []string{"instruction:work", "assistant_response:work"}, wantCalls: 1},
		{name: "a middle with two inner exchanges", middle: "inner", wantValue: `"inner two"`,
			wantMsgs: []string{"instruction:seed", "assistant_response:seed",
				"instruction:inner one", "assistant_response:inner one", "instruction:inner two", "assistant_response:inner two"},
			wantCalls: 2, wantMiddle: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := &innerExchanges{}
			o := newOperateBundleWith(t, func(cfg *ops.Config) {
				if err := cfg.Middles.Register("inner", inner); err != nil {
					t.Fatal(err)
				}
			})
			inner.eng = o.eng
			o.fixed.value = `"fixed"`
			o.mustDo(t, "branch.create", "", `{"branch_id":"b","system":"SYS","chat_model":"scripted:echo"}`)
			o.mustDo(t, "communicate", "b", `{"instruction":"seed"}`)
			seedCalls := o.prov.count()
			req := map[string]any{"instruction": "work", "clear_messages": tt.clear, "skip_validation": true}
			if tt.middle != "" {
				req["middle"] = tt.middle
			}
			data, _ := json.Marshal(req)
			res, err := o.operate(t, "op1", "b", string(data))
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Value) != tt.wantValue {
				t.Errorf("value %s, want %s", res.Value, tt.wantValue)
			}
			if n := o.prov.count() - seedCalls; n != tt.wantCalls {
				t.Errorf("%d model calls, want %d", n, tt.wantCalls)
			}
			middleCalls := len(o.fixed.ins) + inner.calls
			if middleCalls != tt.wantMiddle {
				t.Errorf("the fixed and inner middles ran %d times, want %d", middleCalls, tt.wantMiddle)
			}
			if got := nonSystem(o.branch(t, "b").Messages); !slices.Equal(got, tt.wantMsgs) {
				t.Errorf("messages %q\nwant     %q", got, tt.wantMsgs)
			}
		})
	}
}
