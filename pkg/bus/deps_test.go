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
