package ops_test

import (
	"testing"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

func TestMemoryStore(t *testing.T) {
	opstest.TestStore(t, func(t *testing.T) ops.Store { return ops.NewMemoryStore() })
}
