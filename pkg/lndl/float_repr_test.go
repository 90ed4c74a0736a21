package lndl

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// reprOracle writes Python's float repr with two strconv formattings: the
// exponent from 'e', the fixed form from 'f'.
func reprOracle(f float64) string {
	e := strconv.FormatFloat(f, 'e', -1, 64)
	i := strings.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[i+1:])
	if exp >= -4 && exp < 16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	mant := e[:i]
	sign := "+"
	if exp < 0 {
		sign, exp = "-", -exp
	}
	digits := strconv.Itoa(exp)
	if exp < 10 {
		digits = "0" + digits
	}
	return mant + "e" + sign + digits
}

// TestPythonFloatRepr_matchesOracle checks the one-formatting repr
// against the oracle on edge values and 100000 random floats (random bit
// patterns and random decimals).
func TestPythonFloatRepr_matchesOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []float64{1, -1, 0.5, 1e15, 1e16, 9999999999999998, 1e-4, 1e-5, 0.0001234, 123456789012345.6, 5e-324, math.MaxFloat64, 0.1, 100, 1234.5, -0.00012}
	for range 50000 {
		vals = append(vals, math.Float64frombits(r.Uint64()))
		vals = append(vals, float64(r.IntN(1000000))/math.Pow(10, float64(r.IntN(25)-5)))
	}
	for _, f := range vals {
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
			continue
		}
		if got, want := pythonFloatRepr(f), reprOracle(f); got != want {
			t.Fatalf("pythonFloatRepr(%v) = %s, want %s", f, got, want)
		}
	}
}
