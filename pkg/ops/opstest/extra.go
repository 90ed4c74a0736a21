package opstest

import (
	"encoding/json"
	"testing"

	"github.com/lionbus/lionbus/pkg/wire"
)

// LNDLRounds returns the lndl_rounds of an operate result's extra part,
// failing t when that part does not decode.
func LNDLRounds(t testing.TB, res *wire.Result) []wire.LNDLRound {
	t.Helper()
	var x wire.OperateExtra
	decodeExtra(t, res, &x)
	return x.LNDLRounds
}

// Analyses returns the analyses of a react result's extra part, failing t
// when that part does not decode.
func Analyses(t testing.TB, res *wire.Result) []json.RawMessage {
	t.Helper()
	var x wire.ReactExtra
	decodeExtra(t, res, &x)
	return x.Analyses
}

// RunLog returns the run_log of a run's or an operate's extra part, nil
// when it has none, failing t when that part does not decode.
func RunLog(t testing.TB, res *wire.Result) *wire.RunLogLocation {
	t.Helper()
	var x wire.RunExtra
	decodeExtra(t, res, &x)
	return x.RunLog
}

func decodeExtra(t testing.TB, res *wire.Result, v any) {
	t.Helper()
	if res == nil {
		t.Fatal("no result")
	}
	if err := res.DecodeExtra(v); err != nil {
		t.Fatal(err)
	}
}
