package opstest_test

import (
	"testing"

	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
)

func TestMemoryStore(t *testing.T) {
	opstest.TestStore(t, func(t *testing.T) history.Store { return opstest.NewMemoryStore() })
}
