// Package deploy holds the deployment examples; its test checks the rules
// they must keep: no example secret applied by default, client ports on
// loopback in compose, and a server configuration nats-server accepts.
package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCompose_binds_loopback_and_has_no_default_secrets(t *testing.T) {
	compose := read(t, "compose.yaml")
	ports := regexp.MustCompile(`(?m)^\s*-\s*"([^"]+)"`).FindAllStringSubmatch(compose, -1)
	published := 0
	for _, p := range ports {
		if !regexp.MustCompile(`^\d+:\d+$|^[\d.]+:\d+:\d+$`).MatchString(p[1]) {
			continue // not a port mapping
		}
		published++
		if !strings.HasPrefix(p[1], "127.0.0.1:") {
			t.Errorf("compose publishes %q beyond loopback", p[1])
		}
	}
	if published == 0 {
		t.Fatal("no published ports found: the check saw nothing")
	}
	if m := regexp.MustCompile(`\$\{[A-Z_]*PASSWORD:-`).FindString(compose); m != "" {
		t.Errorf("compose falls back to a default password: %s", m)
	}
}

func TestKubernetes_does_not_apply_the_example_secret(t *testing.T) {
	k := read(t, "k8s/kustomization.yaml")
	for _, line := range strings.Split(k, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "- ") && strings.Contains(line, "secret") {
			t.Errorf("kustomization applies %q", strings.TrimSpace(line))
		}
	}
	if !strings.Contains(k, "worker-deployment.yaml") {
		t.Fatal("kustomization lists no resources: the check saw nothing")
	}
}

func TestNATSConfig_parses(t *testing.T) {
	for _, v := range []string{"LIONBUS_WORKER_PASSWORD", "LIONBUS_CLIENT_PASSWORD", "LIONBUS_TOOLS_PASSWORD", "NATS_SYS_PASSWORD", "NATS_SERVER_NAME", "NATS_STORE_DIR", "LIONBUS_APPROVER_ALICE_PASSWORD"} {
		t.Setenv(v, "test-"+strings.ToLower(v))
	}
	for _, v := range tenantPasswords {
		t.Setenv(v, password(v))
	}
	for _, conf := range []string{"nats/nats.conf", "nats/tenants.conf", "nats/approvers.conf"} {
		opts, err := server.ProcessConfigFile(conf)
		if err != nil {
			t.Fatalf("%s: %v", conf, err)
		}
		if len(opts.Accounts) == 0 && len(opts.Users) == 0 {
			t.Errorf("%s defines no users or accounts", conf)
		}
	}
}

// The Kubernetes ConfigMap carries the same accounts and permissions as
// nats/nats.conf (which the permission tests check), only indented.
func TestKubernetes_NATS_accounts_match_nats_conf(t *testing.T) {
	block := func(s string) string {
		start, end := strings.Index(s, "accounts {"), strings.Index(s, "system_account: SYS")
		if start < 0 || end < start {
			t.Fatal("no accounts block: the check saw nothing")
		}
		var lines []string
		for _, l := range strings.Split(s[start:end], "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	if block(read(t, "k8s/nats.yaml")) != block(read(t, "nats/nats.conf")) {
		t.Error("the accounts of k8s/nats.yaml differ from nats/nats.conf's")
	}
}

// confVars returns the variables a NATS server configuration reads
// (key: $NAME), which the server takes from its environment.
func confVars(t *testing.T, conf string) []string {
	t.Helper()
	var vars []string
	for _, m := range regexp.MustCompile(`(?m)^[^#\n]*?[:=]\s*\$([A-Z][A-Z0-9_]*)\b`).FindAllStringSubmatch(conf, -1) {
		vars = append(vars, m[1])
	}
	if len(vars) < 5 {
		t.Fatalf("found %d variables (%v): the check would see little", len(vars), vars)
	}
	return vars
}

// Every variable a configuration reads is set where it is deployed: in
// compose's environment of the nodes (nats.conf) and in the StatefulSet's
// (the ConfigMap's copy). A missing one stops the server at start.
func TestNATSConfig_variables_are_set_where_deployed(t *testing.T) {
	compose := read(t, "compose.yaml")
	for _, v := range confVars(t, read(t, "nats/nats.conf")) {
		if !regexp.MustCompile(`(?m)^\s+` + v + `:`).MatchString(compose) {
			t.Errorf("nats/nats.conf reads $%s, which compose.yaml does not set", v)
		}
	}
	k8s := read(t, "k8s/nats.yaml")
	configMap, _, _ := strings.Cut(k8s, "\n---")
	for _, v := range confVars(t, configMap) {
		if !strings.Contains(k8s, "- name: "+v+"\n") {
			t.Errorf("the ConfigMap's nats.conf reads $%s, which the StatefulSet does not set", v)
		}
	}
}
