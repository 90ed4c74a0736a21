package protocol

import (
	"strconv"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"

	"github.com/lionbus/lionbus/pkg/wire"
)

// EventTypeChunk is the type of a streamed chunk event.
const EventTypeChunk = EventTypePrefix + "run.chunk"

// ExtSeq is the extension attribute repeating a chunk's seq.
const ExtSeq = "seq"

// chunkNamespace is the UUID namespace of chunk event ids.
var chunkNamespace = uuid.MustParse("8d0f4b7a-5c1e-5e33-a1f4-6c696f6e6368")

// ChunkID returns the CloudEvent id of chunk seq of request requestID: a
// name-based UUID, so that a chunk published again (a redelivered run) is
// recognised.
func ChunkID(requestID string, seq uint64) string {
	return uuid.NewSHA1(chunkNamespace, []byte(requestID+"/"+strconv.FormatUint(seq, 10))).String()
}

// Chunk builds the lionbus.run.chunk event of chunk c of request
// requestID (on branchID): data is c as JSON, with its seq; the seq is also
// the "seq" extension.
func (b EventBuilder) Chunk(requestID, branchID, traceParent string, c wire.Chunk) (*event.Event, error) {
	return b.newEvent(ChunkID(requestID, c.Seq), EventTypeChunk, c, time.Time{},
		ext{ExtRequestID, requestID}, ext{ExtBranchID, branchID},
		ext{ExtTraceParent, traceParent}, ext{ExtSeq, strconv.FormatUint(c.Seq, 10)})
}
