package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// manifest is one document of a YAML file: its kind, its name and its
// text. The checks below are textual: the manifests are written in one
// style (one key per line, flow maps for short values), which they rely on.
type manifest struct {
	file, kind, name, text string
}

var (
	kindRe = regexp.MustCompile(`(?m)^kind:\s*(\S+)`)
	nameRe = regexp.MustCompile(`(?m)^metadata:\n(?:\s+.*\n)*?\s+name:\s*(\S+)`)
)

// manifests reads every document of the YAML files of dir (not of its
// subdirectories), except kustomization.yaml.
func manifests(t *testing.T, dir string) []manifest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []manifest
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		for _, doc := range strings.Split(read(t, f), "\n---\n") {
			m := manifest{file: f, text: doc}
			if k := kindRe.FindStringSubmatch(doc); k != nil {
				m.kind = k[1]
			}
			if n := nameRe.FindStringSubmatch(doc); n != nil {
				m.name = n[1]
			}
			if m.kind != "" {
				out = append(out, m)
			}
		}
	}
	return out
}

// workloads are the Deployments and StatefulSets of deploy/k8s.
func workloads(t *testing.T) []manifest {
	t.Helper()
	var w []manifest
	for _, m := range manifests(t, "k8s") {
		if m.kind == "Deployment" || m.kind == "StatefulSet" {
			w = append(w, m)
		}
	}
	if len(w) < 2 {
		t.Fatalf("found %d workloads in k8s/, want the NATS StatefulSet and the worker Deployment", len(w))
	}
	return w
}

// Every manifest of deploy/k8s but the example Secret is applied, and every
// overlay directory has its kustomization.
func TestKubernetes_kustomization_lists_every_manifest(t *testing.T) {
	k := read(t, "k8s/kustomization.yaml")
	files, _ := filepath.Glob("k8s/*.yaml")
	for _, f := range files {
		b := filepath.Base(f)
		if b == "kustomization.yaml" || strings.Contains(b, "example") {
			continue
		}
		if !strings.Contains(k, "- "+b) {
			t.Errorf("k8s/kustomization.yaml does not list %s", b)
		}
	}
	for _, overlay := range []string{"k8s/keda", "k8s/monitoring"} {
		if _, err := os.Stat(filepath.Join(overlay, "kustomization.yaml")); err != nil {
			t.Errorf("overlay %s: %v", overlay, err)
		}
	}
}

// Every pod runs as non-root without a service-account token, every
// container has a locked-down securityContext and resources, and the pods
// spread over hosts.
func TestKubernetes_workloads_are_locked_down(t *testing.T) {
	for _, w := range workloads(t) {
		containers := strings.Count(w.text, "\n          image:")
		if containers == 0 {
			t.Errorf("%s %s: no containers found", w.kind, w.name)
			continue
		}
		for _, rule := range []struct{ what, want string }{
			{"no service-account token", "automountServiceAccountToken: false"},
			{"a non-root pod", "runAsNonRoot: true"},
			{"a seccomp profile", "seccompProfile: { type: RuntimeDefault }"},
			{"topology spread", "topologySpreadConstraints:"},
			{"spread over hosts", "topologyKey: kubernetes.io/hostname"},
			{"a liveness probe", "livenessProbe:"},
			{"a readiness probe", "readinessProbe:"},
			{"a startup probe", "startupProbe:"},
		} {
			if !strings.Contains(w.text, rule.want) {
				t.Errorf("%s %s lacks %s (%q)", w.kind, w.name, rule.what, rule.want)
			}
		}
		for _, rule := range []struct{ what, want string }{
			{"allowPrivilegeEscalation false", "allowPrivilegeEscalation: false"},
			{"a read-only root filesystem", "readOnlyRootFilesystem: true"},
			{"all capabilities dropped", `capabilities: { drop: ["ALL"] }`},
			{"cpu and memory requests", "requests: { cpu: "},
			{"a memory limit", "limits: { memory: "},
		} {
			if n := strings.Count(w.text, rule.want); n < containers {
				t.Errorf("%s %s: %d of its %d containers have %s (%q)", w.kind, w.name, n, containers, rule.what, rule.want)
			}
		}
	}
}

// pinnedImage is an image reference with an exact version (x.y.z, with an
// optional suffix such as -alpine) or a digest; never latest, never a
// moving x.y.
var pinnedImage = regexp.MustCompile(`^[a-z0-9./-]+(:v?\d+\.\d+\.\d+[a-z0-9.-]*)?(@sha256:[0-9a-f]{64})?$`)

func checkPinned(t *testing.T, where, image string) {
	t.Helper()
	if !pinnedImage.MatchString(image) || !(strings.Contains(image, "@sha256:") || strings.Contains(image, ":")) {
		t.Errorf("%s: image %q is not pinned to an exact version or digest", where, image)
	}
}

var imageRe = regexp.MustCompile(`(?m)^\s*image:\s*(\S+)`)

func TestImages_are_pinned(t *testing.T) {
	seen := 0
	for _, dir := range []string{"k8s", "k8s/keda", "k8s/monitoring"} {
		for _, m := range manifests(t, dir) {
			for _, img := range imageRe.FindAllStringSubmatch(m.text, -1) {
				checkPinned(t, m.file, img[1])
				seen++
			}
		}
	}
	k := read(t, "k8s/kustomization.yaml")
	tag := regexp.MustCompile(`(?m)^\s*newTag:\s*(\S+)`).FindStringSubmatch(k)
	if tag == nil {
		t.Error("k8s/kustomization.yaml sets no newTag for the worker image")
	} else {
		checkPinned(t, "k8s/kustomization.yaml", "lionbus:"+tag[1])
	}
	// compose builds lionbus:<version> itself and pulls nats.
	for _, img := range imageRe.FindAllStringSubmatch(read(t, "compose.yaml"), -1) {
		checkPinned(t, "compose.yaml", img[1])
		seen++
	}
	if seen < 4 {
		t.Fatalf("found %d images: the check saw too little", seen)
	}
}

// Both NATS and the workers have a PodDisruptionBudget selecting their
// pods; NATS's lets one node go at a time (a stream keeps its quorum of 2
// of 3).
func TestKubernetes_disruption_budgets(t *testing.T) {
	pdbs := map[string]string{}
	for _, m := range manifests(t, "k8s") {
		if m.kind == "PodDisruptionBudget" {
			sel := regexp.MustCompile(`matchLabels:\s*\{\s*app\.kubernetes\.io/name:\s*(\S+)\s*\}`).FindStringSubmatch(m.text)
			if sel == nil {
				t.Errorf("PodDisruptionBudget %s selects nothing", m.name)
				continue
			}
			pdbs[sel[1]] = m.text
		}
	}
	for _, app := range []string{"nats", "lionbus-worker"} {
		if _, ok := pdbs[app]; !ok {
			t.Errorf("no PodDisruptionBudget for %s", app)
		}
	}
	if p := pdbs["nats"]; p != "" && !strings.Contains(p, "maxUnavailable: 1") {
		t.Error("the NATS PodDisruptionBudget must allow at most one node down")
	}
}

// The probes hit the worker's health endpoints on the port its ConfigMap
// serves them on.
func TestKubernetes_worker_probes_match_its_metrics_port(t *testing.T) {
	cm := read(t, "k8s/worker-configmap.yaml")
	addr := regexp.MustCompile(`LIONBUS_METRICS_ADDR:\s*"?:(\d+)"?`).FindStringSubmatch(cm)
	if addr == nil {
		t.Fatal("the worker ConfigMap sets no LIONBUS_METRICS_ADDR")
	}
	d := read(t, "k8s/worker-deployment.yaml")
	for _, want := range []string{
		"containerPort: " + addr[1],
		"httpGet: { path: /healthz, port: metrics }",
		"httpGet: { path: /readyz, port: metrics }",
		`prometheus.io/port: "` + addr[1] + `"`,
		"port: " + addr[1] + " }",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("worker-deployment.yaml lacks %q", want)
		}
	}
}

// The NetworkPolicies deny ingress by default and open the ports the
// pods serve, each to its users only.
func TestKubernetes_network_policies(t *testing.T) {
	var deny bool
	covered := map[string]bool{}
	for _, m := range manifests(t, "k8s") {
		if m.kind != "NetworkPolicy" {
			continue
		}
		if strings.Contains(m.text, "podSelector: {}") && !strings.Contains(m.text, "ingress:") {
			deny = true
		}
		for _, port := range regexp.MustCompile(`port: (\d+), protocol`).FindAllStringSubmatch(m.text, -1) {
			covered[port[1]] = true
		}
	}
	if !deny {
		t.Error("no default-deny ingress NetworkPolicy")
	}
	for _, port := range []string{"4222", "6222", "8222", "9464"} {
		if !covered[port] {
			t.Errorf("no NetworkPolicy allows port %s", port)
		}
	}
}

// The ScaledObject scales the worker Deployment on the workers' consumer
// of the requests stream, as lionbus names them.
func TestKEDA_scales_workers_on_their_consumer(t *testing.T) {
	so := read(t, "k8s/keda/scaledobject.yaml")
	subj, err := protocol.NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kind: ScaledObject",
		"name: lionbus-worker",
		"type: nats-jetstream",
		`account: "LIONBUS"`,
		`stream: "` + subj.OpsStream() + `"`,
		`consumer: "` + subj.WorkersConsumer() + `"`,
		"nats-cluster.lionbus.svc.cluster.local:8222",
	} {
		if !strings.Contains(so, want) {
			t.Errorf("scaledobject.yaml lacks %q", want)
		}
	}
}

// The dashboard is valid JSON and every metric it queries is one the
// worker registers (pkg/bus/metrics).
func TestGrafana_dashboard_queries_real_metrics(t *testing.T) {
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(read(t, "k8s/monitoring/lionbus.json")), &d); err != nil {
		t.Fatal(err)
	}
	src := read(t, filepath.Join("..", "pkg", "bus", "metrics", "metrics.go"))
	var names []string
	metricName := regexp.MustCompile(`lionbus_[a-z_]+`)
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names = append(names, metricName.FindAllString(tg.Expr, -1)...)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	for _, n := range names {
		base := strings.TrimPrefix(n, "lionbus_")
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			base = strings.TrimSuffix(base, suffix) // a histogram's series
		}
		want := `Name: "` + base + `"`
		if s, ok := strings.CutPrefix(base, "store_"); ok {
			want = `Subsystem: "store", Name: "` + s + `"`
		}
		if !strings.Contains(src, want) {
			t.Errorf("the dashboard queries %s, which pkg/bus/metrics does not register", n)
		}
	}
	for _, must := range []string{"lionbus_requests_total", "lionbus_dead_letters_total", "lionbus_model_tokens_total", "lionbus_tool_call_duration_seconds_bucket"} {
		if !slices.Contains(names, must) {
			t.Errorf("the dashboard does not show %s", must)
		}
	}
}
