package ops

import (
	"encoding/json"

	"github.com/lionbus/lionbus/pkg/ops/internal/decode"
)

// decodeData decodes a request's data into v ([decode.Data]).
func decodeData(data json.RawMessage, v any) error { return decode.Data(data, v) }

// marshalValue encodes a result value ([decode.Value]).
func marshalValue(v any) (json.RawMessage, error) { return decode.Value(v) }
