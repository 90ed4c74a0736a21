package ops_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
)

func TestNumber(t *testing.T) {
	type myInt int
	tests := []struct {
		in   any
		want float64
		ok   bool
	}{
		{1.5, 1.5, true}, {float32(2), 2, true}, {7, 7, true}, {int8(-3), -3, true}, {uint64(9), 9, true},
		{myInt(4), 4, true}, {json.Number("12.5"), 12.5, true}, {json.Number("x"), 0, false},
		{math.NaN(), 0, false}, {math.Inf(1), 0, false}, {"3", 0, false}, {true, 0, false}, {nil, 0, false},
	}
	for _, tt := range tests {
		got, ok := ops.Number(tt.in)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("Number(%#v) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
