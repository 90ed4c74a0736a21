package bus_test

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/wire"
	"github.com/lionbus/lionbus/schemas"
)

// schemaVerbs returns the verbs V that have a schema lionbus.V.<kind>.
func schemaVerbs(kind string) []string {
	var out []string
	for _, typ := range schemas.Types() {
		if v, ok := strings.CutSuffix(strings.TrimPrefix(typ, protocol.EventTypePrefix), "."+kind); ok && strings.HasPrefix(typ, protocol.EventTypePrefix) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// TestDrift_served_verbs_have_request_and_result_schemas: a verb lives in
// the engine's verb table, a request schema and a result schema; the three
// must name the same verbs, so that a verb added to one alone fails here.
// 0021-D1-05: the engine's verb table is the one authoritative list of the
// verbs served, and the schemas are checked against it.
func TestDrift_served_verbs_have_request_and_result_schemas(t *testing.T) {
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	served := eng.Verbs()
	requests := schemaVerbs("request")
	results := schemaVerbs("result")
	if len(served) == 0 {
		t.Fatal("the engine serves no verbs")
	}
	if !slices.Equal(served, requests) {
		t.Errorf("served verbs %v, request schemas for %v", served, requests)
	}
	if !slices.Equal(served, results) {
		t.Errorf("served verbs %v, result schemas for %v", served, results)
	}
	// The codec accepts a request of every served verb, and of no other
	// verb without a schema.
	codec, err := protocol.NewCodec(protocol.CodecConfig{Validator: schemas.Validator{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range append(slices.Clone(served), "no_such_verb") {
		ev, err := protocol.EventBuilder{}.Request(verb, "b1", "", "", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		msg, err := protocol.Encode(codec.Subjects().Op(verb), ev, protocol.Structured)
		if err != nil {
			t.Fatal(err)
		}
		_, err = codec.DecodeRequest(msg)
		var ee *protocol.EventError
		if isType := errors.As(err, &ee) && ee.Code == protocol.CodeUnknownType; isType != (verb == "no_such_verb") {
			t.Errorf("codec on a %s request: %v", verb, err)
		}
	}
}

// TestDrift_error_codes: every code an answer can carry is unique and fits
// the code pattern of the lionbus.error schema, and the schema's list of
// codes ($defs/code, from which other languages' types are generated) is
// exactly protocol.Codes().
func TestDrift_error_codes(t *testing.T) {
	raw, ok := schemas.Schema(protocol.EventTypeError)
	if !ok {
		t.Fatal("no lionbus.error schema")
	}
	var s struct {
		Properties struct {
			Code struct {
				Pattern   string `json:"pattern"`
				MaxLength int    `json:"maxLength"`
			} `json:"code"`
		} `json:"properties"`
		Defs struct {
			Code struct {
				Enum []ops.Code `json:"enum"`
			} `json:"code"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(s.Properties.Code.Pattern)
	seen := map[ops.Code]bool{}
	for _, c := range protocol.Codes() {
		if seen[c] {
			t.Errorf("code %q listed twice", c)
		}
		seen[c] = true
		if !re.MatchString(string(c)) || len(c) > s.Properties.Code.MaxLength {
			t.Errorf("code %q does not fit the schema's pattern %s", c, re)
		}
	}
	if len(seen) < 19 {
		t.Errorf("only %d codes", len(seen))
	}
	if got, want := s.Defs.Code.Enum, protocol.Codes(); !slices.Equal(got, want) {
		t.Errorf("lionbus.error.json $defs/code/enum is\n%v\nprotocol.Codes() is\n%v", got, want)
	}
}

// TestDrift_signal_types_have_schemas: every signal the engine emits is
// published as lionbus.<type>, which has a schema for its data, and every
// event schema that is neither a request, a result nor an answer is a
// signal's or the chunk event's.
func TestDrift_signal_types_have_schemas(t *testing.T) {
	for _, typ := range approvalEvents {
		if !schemas.Has(typ) {
			t.Errorf("the approval event %s has no schema %s.json", typ, typ)
		}
	}
	if !schemas.Has(protocol.EventTypeChunk) {
		t.Errorf("the chunk event has no schema %s.json", protocol.EventTypeChunk)
	}
	var signals []string
	for _, st := range ops.SignalTypes() {
		typ := protocol.EventTypePrefix + string(st)
		signals = append(signals, typ)
		if !schemas.Has(typ) {
			t.Errorf("signal %s has no schema %s.json", st, typ)
		}
	}
	for _, typ := range schemas.Types() {
		if strings.HasSuffix(typ, ".request") || strings.HasSuffix(typ, ".result") || typ == protocol.EventTypeError || typ == protocol.EventTypeChunk {
			continue
		}
		if slices.Contains(approvalEvents, typ) {
			// The approval events are the worker's gate's (pkg/tools),
			// not the engine's signals (docs/approvals.md).
			continue
		}
		if !slices.Contains(signals, typ) {
			t.Errorf("schema %s is of no signal the engine emits", typ)
		}
	}
}

// TestDrift_protocol_verb_table: 0021-D1-05, the docs side. The verb table
// of docs/protocol.md lists every verb the engine serves as served, with a
// section of its own, and lists as "not yet" only verbs the engine does not
// serve (today every verb of the table is served).
func TestDrift_protocol_verb_table(t *testing.T) {
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	eng, err := ops.NewEngine(ops.Config{Store: opstest.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	served := eng.Verbs()
	// A row: | [`v1`, `v2`](#anchor) | served? | ...
	row := regexp.MustCompile(`^\| \[([^\]]+)\]\(#([^)]+)\) \| ([^|]+) \|`)
	name := regexp.MustCompile("`([^`]+)`")
	documented := map[string]bool{}
	var notYet []string
	for _, line := range strings.Split(string(doc), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, n := range name.FindAllStringSubmatch(m[1], -1) {
			verb := n[1]
			if strings.HasPrefix(strings.TrimSpace(m[3]), "not yet") {
				notYet = append(notYet, verb)
				continue
			}
			documented[verb] = true
			if slices.Contains(served, verb) && m[2] != strings.ReplaceAll(verb, ".", "") {
				t.Errorf("the row of %s links #%s, not its own section", verb, m[2])
			}
		}
	}
	if len(documented) == 0 {
		t.Fatalf("no verb table found in docs/protocol.md (served %v, not yet %v)", documented, notYet)
	}
	for _, v := range served {
		if !documented[v] {
			t.Errorf("served verb %s has no row of its own in the verb table of docs/protocol.md", v)
		}
	}
	for _, v := range notYet {
		if slices.Contains(served, v) {
			t.Errorf("docs/protocol.md lists %s as not served yet, but the engine serves it", v)
		}
	}
}

// approvalEvents are the event types of parked approvals.
var approvalEvents = []string{wire.ApprovalPendingType, wire.ApprovalAnswerType, wire.ApprovalOutcomeType}
