package lndl

import (
	"encoding/json"
	"testing"
)

func TestConformanceRender(t *testing.T) {
	vectors := loadVectors(t, "render")
	if len(vectors) != 24 {
		t.Fatalf("render vectors = %d, want 24", len(vectors))
	}
	for _, v := range vectors {
		t.Run(v.ID, func(t *testing.T) {
			var in struct {
				Target json.RawMessage `json:"target"`
			}
			var want struct {
				Specs *string `json:"specs"`
			}
			if err := json.Unmarshal(v.Input, &in); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(v.Expect, &want); err != nil {
				t.Fatal(err)
			}
			var tg *Target
			if string(in.Target) != "null" {
				var err error
				if tg, err = ParseTarget(in.Target); err != nil {
					t.Fatal(err)
				}
			}
			got, ok := RenderSpecs(tg)
			switch {
			case want.Specs == nil && ok:
				t.Errorf("got %q, want no line", got)
			case want.Specs != nil && (!ok || got != *want.Specs):
				t.Errorf("got %q (ok=%v), want %q", got, ok, *want.Specs)
			}
			if Render(tg) != got {
				t.Error("Render and RenderSpecs disagree")
			}
		})
	}
}
