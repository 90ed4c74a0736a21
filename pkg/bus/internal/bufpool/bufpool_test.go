package bufpool_test

import (
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/internal/bufpool"
)

// TestGet: a buffer comes empty, whatever the one given back before
// held, and one grown past MaxKept is not handed out again.
func TestGet(t *testing.T) {
	buf, release := bufpool.Get()
	buf.WriteString("held by an earlier encoding")
	release()
	for range 100 {
		buf, release := bufpool.Get()
		if buf.Len() != 0 {
			t.Fatalf("Get returned a buffer holding %q", buf.String())
		}
		release()
	}
	big, release := bufpool.Get()
	big.Grow(2 * bufpool.MaxKept)
	release()
	for range 100 {
		buf, release := bufpool.Get()
		if buf == big {
			t.Fatalf("a buffer of capacity %d was kept (MaxKept %d)", big.Cap(), bufpool.MaxKept)
		}
		release()
	}
}
