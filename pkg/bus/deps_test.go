package bus_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDeps_clients_do_not_link_the_server: a program that only sends
// requests imports the protocol and the client, and neither may pull in
// nats-server (or the worker); cmd/publisher, which is such a program,
// neither.
func TestDeps_clients_do_not_link_the_server(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	forbidden := []string{
		"github.com/nats-io/nats-server/",
		"github.com/lionbus/lionbus/pkg/bus/embedded",
		"github.com/lionbus/lionbus/pkg/bus/worker",
		"github.com/lionbus/lionbus/pkg/bus/store",
	}
	for _, pkg := range []string{
		"github.com/lionbus/lionbus/pkg/bus/protocol",
		"github.com/lionbus/lionbus/pkg/bus/client",
		"github.com/lionbus/lionbus/cmd/publisher",
	} {
		out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed only %d packages: %q", pkg, len(deps), deps)
		}
		for _, d := range deps {
			for _, f := range forbidden {
				if strings.HasPrefix(d, f) {
					t.Errorf("%s depends on %s", pkg, d)
				}
			}
		}
	}
}

// TestDeps_ops_is_transport_free: 0021-D1-03. The operations layer and its
// providers import nothing of the transport: no NATS client or server, no
// package of pkg/bus, no command. The dependency runs one way only: the
// worker imports pkg/ops.
func TestDeps_ops_is_transport_free(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	const ops = "github.com/lionbus/lionbus/pkg/ops"
	tests := []struct {
		pkg       string
		forbidden []string // prefixes no dependency may have
		required  []string // dependencies it must have
	}{
		{pkg: ops + "/...", forbidden: []string{
			"github.com/nats-io/",
			"github.com/lionbus/lionbus/pkg/bus",
			"github.com/lionbus/lionbus/cmd/",
		}, required: []string{ops}},
		{pkg: "github.com/lionbus/lionbus/pkg/bus/worker", required: []string{ops, "github.com/nats-io/nats.go"}},
	}
	for _, tt := range tests {
		out, err := exec.Command(goBin, "list", "-deps", tt.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tt.pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed only %d packages: %q", tt.pkg, len(deps), deps)
		}
		for _, d := range deps {
			for _, f := range tt.forbidden {
				if strings.HasPrefix(d, f) {
					t.Errorf("%s depends on %s", tt.pkg, d)
				}
			}
		}
		for _, r := range tt.required {
			if !slices.Contains(deps, r) {
				t.Errorf("%s does not depend on %s", tt.pkg, r)
			}
		}
	}
}

// TestDeps_sdks_link_no_engine: a tool service (pkg/tools) and a Go client
// (pkg/bus/client), and the protocol both use, link neither the engine
// (pkg/ops), nor LNDL (pkg/lndl), nor a JSON Schema compiler (the
// compiled schemas of package schemas, or the compiler itself): they speak
// the protocol through pkg/wire. A tool service opts into the compiler
// with pkg/tools/toolschema. The publisher, a client, links no engine
// either. pkg/wire itself imports the standard library only.
func TestDeps_sdks_link_no_engine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	const mod = "github.com/lionbus/lionbus/"
	engine := []string{mod + "pkg/ops", mod + "pkg/lndl", mod + "schemas", "github.com/santhosh-tekuri/jsonschema"}
	tests := []struct {
		pkg       string
		forbidden []string
		required  []string
	}{
		{pkg: mod + "pkg/tools", forbidden: engine, required: []string{mod + "pkg/wire"}},
		{pkg: mod + "pkg/bus/client", forbidden: engine, required: []string{mod + "pkg/wire"}},
		{pkg: mod + "pkg/bus/protocol", forbidden: engine, required: []string{mod + "pkg/wire"}},
		{pkg: mod + "pkg/bus/histexport", forbidden: append([]string{"github.com/nats-io/"}, engine...), required: []string{mod + "pkg/wire"}},
		{pkg: mod + "cmd/publisher", forbidden: []string{mod + "pkg/ops"}, required: []string{mod + "pkg/wire"}},
		{pkg: mod + "pkg/wire", forbidden: []string{"github.com/", "golang.org/"}},
		{pkg: mod + "pkg/tools/toolschema", forbidden: []string{mod + "pkg/ops", mod + "pkg/lndl"}, required: []string{"github.com/santhosh-tekuri/jsonschema/v6"}},
	}
	for _, tt := range tests {
		out, err := exec.Command(goBin, "list", "-deps", tt.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tt.pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed only %d packages: %q", tt.pkg, len(deps), deps)
		}
		for _, d := range deps {
			if d == tt.pkg {
				continue
			}
			for _, f := range tt.forbidden {
				if strings.HasPrefix(d, f) {
					t.Errorf("%s depends on %s", tt.pkg, d)
				}
			}
		}
		for _, r := range tt.required {
			if !slices.Contains(deps, r) {
				t.Errorf("%s does not depend on %s", tt.pkg, r)
			}
		}
	}
}
