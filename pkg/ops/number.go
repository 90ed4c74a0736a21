package ops

import (
	"encoding/json"
	"math"
	"reflect"
)

// Number returns v as a float64 when it is a finite number of any Go
// numeric type or a json.Number: how options and metadata that came
// through JSON, or from Go code, are read as numbers.
func Number(v any) (float64, bool) {
	var f float64
	if n, ok := v.(json.Number); ok {
		var err error
		if f, err = n.Float64(); err != nil {
			return 0, false
		}
	} else {
		rv := reflect.ValueOf(v)
		switch {
		case !rv.IsValid():
			return 0, false
		case rv.CanFloat():
			f = rv.Float()
		case rv.CanInt():
			f = float64(rv.Int())
		case rv.CanUint():
			f = float64(rv.Uint())
		default:
			return 0, false
		}
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}
