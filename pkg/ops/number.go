package ops

import "github.com/lionbus/lionbus/pkg/ops/internal/jsonval"

// Number returns v as a float64 when it is a finite number of any Go
// numeric type or a json.Number: how options and metadata that came
// through JSON, or from Go code, are read as numbers.
func Number(v any) (float64, bool) { return jsonval.Number(v) }
