// Package bufpool keeps the byte buffers that events, history and
// snapshots are encoded into for reuse, so that an encoding whose bytes are
// copied out (a NATS publish, a compacted member of an event) does not
// leave its buffer to the garbage collector.
package bufpool

import (
	"bytes"
	"sync"
)

// MaxKept is the capacity past which a buffer is not kept for reuse but
// left to the garbage collector: one large snapshot must not keep a
// megabyte alive in the pool for every small event after it.
const MaxKept = 1 << 20

var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Get returns an empty buffer and the func that gives it back, to be
// called once its bytes are no longer used.
func Get() (*bytes.Buffer, func()) {
	buf := buffers.Get().(*bytes.Buffer)
	buf.Reset()
	return buf, func() {
		if buf.Cap() <= MaxKept {
			buffers.Put(buf)
		}
	}
}
