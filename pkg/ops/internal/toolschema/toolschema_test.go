package toolschema

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Names, Described and Native, each against what it is given.
func TestToolSchemas(t *testing.T) {
	t.Parallel()
	if got := Names(nil, []string{"a", "b"}); !reflect.DeepEqual(got, []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}) {
		t.Errorf("Names(nil, all) = %v", got)
	}
	if got := Names([]string{}, []string{"a"}); len(got) != 0 {
		t.Errorf("Names(none selected) = %v", got)
	}
	var asked []string
	described := Described([]any{map[string]any{"name": "add"}, "not a schema", map[string]any{"name": "gone"}}, func(names []string) []wire.ToolSpec {
		asked = names
		return []wire.ToolSpec{{Name: "add", Description: "adds", Parameters: json.RawMessage(`{"type":"object"}`)}}
	})
	want := []any{map[string]any{"name": "add", "description": "adds", "parameters": map[string]any{"type": "object"}}}
	if !reflect.DeepEqual(asked, []string{"add", "gone"}) || !reflect.DeepEqual(described, want) {
		t.Errorf("Described asked %q, gave %v", asked, described)
	}
	native := Native(append(described, map[string]any{"description": "no name"}, map[string]any{"name": "bare"}))
	wantNative := []wire.ToolSpec{{Name: "add", Description: "adds", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "bare"}}
	if !reflect.DeepEqual(native, wantNative) {
		t.Errorf("Native = %+v, want %+v", native, wantNative)
	}
}
