package protocol_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/schemas"
)

// The list of error codes in schemas/lionbus.error.json ($defs/code, from
// which other languages' types are generated) is exactly protocol.Codes():
// a code added in Go and not to the schema, or the reverse, fails here.
func TestCodes_match_the_error_schema(t *testing.T) {
	raw, ok := schemas.Schema(protocol.EventTypeError)
	if !ok {
		t.Fatal("no schema for lionbus.error")
	}
	var doc struct {
		Defs struct {
			Code struct {
				Enum []ops.Code `json:"enum"`
			} `json:"code"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if got, want := doc.Defs.Code.Enum, protocol.Codes(); !slices.Equal(got, want) {
		t.Fatalf("lionbus.error.json $defs/code/enum is\n%v\nprotocol.Codes() is\n%v", got, want)
	}
}
