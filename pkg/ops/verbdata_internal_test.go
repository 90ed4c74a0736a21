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
		// parts are the types data embeds instead of the wire type: parts
		// of it, or the data type of another verb checked here; nil means
		// the wire type.
		parts []any
	}{
		{verb: "communicate", data: chatData{}, wire: wire.CommunicateRequest{}},
		{verb: "operate", data: operateData{}, wire: wire.OperateRequest{}, own: []string{"round_budget", "request_model", "operative_model", "imodel", "operative"}},
		{verb: "react", data: reactData{}, wire: wire.ReactRequest{}},
		{verb: "interpret", data: interpretData{}, wire: wire.InterpretRequest{}},
		{verb: "act", data: actData{}, wire: wire.ActRequest{}, own: []string{"strategy"}},
		{verb: "parse", data: parseData{}, wire: wire.ParseRequest{}, own: []string{"text"}},
		// run's exchange is communicate's; its own parameters are the wire's.
		{verb: "run", data: runData{}, wire: wire.RunRequest{}, parts: []any{chatData{}, wire.RunParams{}}},
		{verb: "branch.create", data: branchCreateData{}, wire: wire.BranchCreateRequest{}},
		{verb: "branch.clone", data: branchCloneData{}, wire: wire.BranchCloneRequest{}},
		{verb: "branch.history", data: branchHistoryData{}, wire: wire.BranchHistoryRequest{}},
		{verb: "branch.get", data: branchGetData{}, wire: wire.BranchGetRequest{}},
		{verb: "branch.import", data: wire.BranchImportRequest{}, wire: wire.BranchImportRequest{}},
	}
	for _, tt := range tests {
		t.Run(tt.verb, func(t *testing.T) {
			dt, wt := reflect.TypeOf(tt.data), reflect.TypeOf(tt.wire)
			// Every field of the wire type is decoded.
			have := jsonNames(dt)
			for _, name := range jsonNames(wt) {
				if !slices.Contains(have, name) {
					t.Errorf("%s does not decode %s's %q", dt, wt, name)
				}
			}
			if dt == wt {
				return // the wire type itself
			}
			parts := []reflect.Type{wt}
			if tt.parts != nil {
				parts = parts[:0]
				for _, p := range tt.parts {
					parts = append(parts, reflect.TypeOf(p))
				}
			}
			embedded := map[reflect.Type]bool{}
			for i := 0; i < dt.NumField(); i++ {
				f := dt.Field(i)
				switch {
				case f.Anonymous:
					if !slices.Contains(parts, f.Type) {
						t.Errorf("%s embeds %s, want %v", dt, f.Type, parts)
					}
					embedded[f.Type] = true
				case !f.IsExported():
				default:
					name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
					if !slices.Contains(tt.own, name) {
						t.Errorf("%s declares %s (%q) itself: declare it in %s", dt, f.Name, name, wt)
					}
				}
			}
			for _, p := range parts {
				if !embedded[p] {
					t.Errorf("%s does not embed %s", dt, p)
				}
				if p.PkgPath() == wt.PkgPath() && p != wt && !embeds(wt, p) {
					t.Errorf("%s is not a part of %s", p, wt)
				}
			}
		})
	}
}

// jsonNames returns the JSON names encoding/json decodes into t, a struct
// type, its embedded structs' included.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			out = append(out, jsonNames(f.Type)...)
		case f.IsExported():
			if name == "" {
				name = f.Name
			}
			out = append(out, name)
		}
	}
	return out
}

// embeds reports whether struct type t embeds part, directly or deeper.
func embeds(t, part reflect.Type) bool {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && (f.Type == part || (f.Type.Kind() == reflect.Struct && embeds(f.Type, part))) {
			return true
		}
	}
	return false
}
