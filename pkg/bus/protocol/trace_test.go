package protocol_test

import (
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

func TestValidTraceParent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"00-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-01", true},
		{"00-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-00", true},
		{"01-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-01-extra", true},
		{"00-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-01-extra", false},
		{"ff-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-01", false},
		{"00-00000000000000000000000000000000-b9c7c989f97918e1-01", false},
		{"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", false},
		{"00-0AF7651916CD43DD8448EB211C80319C-b9c7c989f97918e1-01", false},
		{"00-0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1", false},
		{"00_0af7651916cd43dd8448eb211c80319c-b9c7c989f97918e1-01", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := protocol.ValidTraceParent(tt.in); got != tt.want {
			t.Errorf("ValidTraceParent(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestNewTraceParent(t *testing.T) {
	t.Parallel()
	a, b := protocol.NewTraceParent(), protocol.NewTraceParent()
	if !protocol.ValidTraceParent(a) || !protocol.ValidTraceParent(b) {
		t.Fatalf("NewTraceParent = %q, %q: not valid", a, b)
	}
	if a == b {
		t.Errorf("two NewTraceParent calls returned %q", a)
	}
	if a[len(a)-2:] != "01" {
		t.Errorf("NewTraceParent = %q, want sampled", a)
	}
}
