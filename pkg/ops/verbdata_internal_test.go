package ops

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Each verb's request data is decoded into its pkg/wire type, so that its
// fields are declared once in Go: the engine's data type embeds the wire
// type and declares only the fields it reads as sent (to refuse them with
// its own message). A field added to an engine data type instead of its
// wire type fails here.
func TestVerbData_fields_declared_once(t *testing.T) {
	tests := []struct {
		verb string
		data any
		wire any
		own  []string // JSON names the engine reads as sent
	}{
		{"communicate", chatData{}, wire.CommunicateRequest{}, nil},
		{"operate", operateData{}, wire.OperateRequest{}, []string{"round_budget", "request_model", "operative_model", "imodel", "operative"}},
		{"react", reactData{}, wire.ReactRequest{}, nil},
		{"interpret", interpretData{}, wire.InterpretRequest{}, nil},
		{"act", actData{}, wire.ActRequest{}, []string{"strategy"}},
		{"parse", parseData{}, wire.ParseRequest{}, []string{"text"}},
		{"branch.create", branchCreateData{}, wire.BranchCreateRequest{}, nil},
		{"branch.clone", branchCloneData{}, wire.BranchCloneRequest{}, nil},
		{"branch.history", branchHistoryData{}, wire.BranchHistoryRequest{}, nil},
		{"branch.get", branchGetData{}, wire.BranchGetRequest{}, nil},
		{"branch.import", branchImportData{}, wire.BranchImportRequest{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.verb, func(t *testing.T) {
			dt, wt := reflect.TypeOf(tt.data), reflect.TypeOf(tt.wire)
			if dt == wt {
				return // the wire type itself
			}
			embeds := false
			for i := 0; i < dt.NumField(); i++ {
				f := dt.Field(i)
				switch {
				case f.Anonymous:
					if f.Type != wt {
						t.Errorf("%s embeds %s, want %s", dt, f.Type, wt)
					}
					embeds = true
				case !f.IsExported():
				default:
					name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
					if !slices.Contains(tt.own, name) {
						t.Errorf("%s declares %s (%q) itself: declare it in %s", dt, f.Name, name, wt)
					}
				}
			}
			if !embeds {
				t.Errorf("%s does not embed %s", dt, wt)
			}
		})
	}
}
