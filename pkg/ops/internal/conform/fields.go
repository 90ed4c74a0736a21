package conform

import "github.com/lionbus/lionbus/pkg/ops/internal/jsonrecover"

// Fields maps the first JSON object recovered from text onto the
// expected field names (request_fields, ADR-0021 D3): exact keys first,
// then by normalized name and by similarity (see matchKeys, with
// DefaultSimilarityThreshold). Only expected fields that were found are
// returned; {} when text holds no JSON object.
func Fields(text string, fields []string) map[string]any {
	out := map[string]any{}
	cands, err := jsonrecover.Recover(text)
	if err != nil {
		return out
	}
	var obj map[string]any
	for _, c := range cands {
		if m, ok := c.(map[string]any); ok {
			obj = m
			break
		}
	}
	if obj == nil {
		return out
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	for k, f := range matchKeys(keys, fields, true, DefaultSimilarityThreshold) {
		out[f] = obj[k]
	}
	return out
}
