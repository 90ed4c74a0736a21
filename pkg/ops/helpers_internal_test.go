package ops

import "github.com/lionbus/lionbus/pkg/ops/internal/jsonval"

// compactJSON is v as compact JSON, for the internal tests' messages and
// comparisons.
func compactJSON(v any) string { return jsonval.Compact(v) }
