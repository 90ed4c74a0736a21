package schema

import (
	"encoding/json"
	"slices"

	"github.com/lionbus/lionbus/pkg/ops/internal/decode"
	"github.com/lionbus/lionbus/pkg/wire"
)

// FieldModels decodes the named field_models: each a JSON Schema object;
// an entry without a name is left out, a
// generated field's name is refused.
func FieldModels(raw map[string]json.RawMessage) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for name, r := range raw {
		if name == "" {
			continue
		}
		if slices.Contains(GeneratedFields, name) {
			return nil, wire.Errorf(wire.CodeInvalidRequest, "data.field_models.%s: %q is a field operate generates", name, name)
		}
		var s map[string]any
		if err := json.Unmarshal(r, &s); err != nil || s == nil {
			if decode.IsOutOfRange(err) {
				return nil, wire.Errorf(wire.CodeInvalidRequest, "data.field_models.%s %s", wire.Truncate(name, 64), decode.OutOfRangeMessage(err))
			}
			return nil, wire.Errorf(wire.CodeInvalidRequest, "data.field_models.%s must be a JSON Schema object", wire.Truncate(name, 64))
		}
		out[name] = s
	}
	return out, nil
}
