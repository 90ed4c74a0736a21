package deploy

import (
	"bytes"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Dockerfile's rules, checked without a Docker daemon: exact base
// images (the Go one is go.mod's release), a scratch runtime, a numeric
// non-root user, static reproducible binaries of existing commands.
func TestDockerfile_rules(t *testing.T) {
	df := read(t, filepath.Join("..", "Dockerfile"))
	gomod := read(t, filepath.Join("..", "go.mod"))

	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+\.\d+)$`).FindStringSubmatch(gomod)
	if goVersion == nil {
		t.Fatal("go.mod has no go x.y.z line")
	}
	args := map[string]string{}
	for _, a := range regexp.MustCompile(`(?m)^ARG (\w+)=(\S+)$`).FindAllStringSubmatch(df, -1) {
		args[a[1]] = a[2]
	}
	froms := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(df, -1)
	if len(froms) != 2 {
		t.Fatalf("want a build and a runtime stage, found %d FROM lines", len(froms))
	}
	for _, f := range froms {
		img := f[1]
		if m := regexp.MustCompile(`^\$\{(\w+)\}$`).FindStringSubmatch(img); m != nil {
			img = args[m[1]]
		}
		switch {
		case img == "scratch":
		case strings.HasPrefix(img, "golang:"):
			if !strings.HasPrefix(img, "golang:"+goVersion[1]+"-") && img != "golang:"+goVersion[1] {
				t.Errorf("build image %s is not go.mod's Go %s", img, goVersion[1])
			}
			checkPinned(t, "Dockerfile", img)
		default:
			checkPinned(t, "Dockerfile", img)
		}
	}
	if froms[len(froms)-1][1] != "scratch" {
		t.Errorf("the runtime stage is %s, want scratch", froms[len(froms)-1][1])
	}
	user := regexp.MustCompile(`(?m)^USER (\d+)(:\d+)?$`).FindStringSubmatch(df)
	if user == nil || user[1] == "0" {
		t.Error("the image must run as a numeric non-root USER")
	}
	for _, want := range []string{"CGO_ENABLED=0", "-buildvcs=false", "-trimpath", "-buildid=", `ENTRYPOINT ["/usr/local/bin/worker"]`, "go mod verify"} {
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	for _, cmd := range dockerCommands(t, df) {
		if _, err := os.Stat(filepath.Join("..", cmd)); err != nil {
			t.Errorf("the Dockerfile builds %s: %v", cmd, err)
		}
		if !strings.Contains(df, "/out/"+filepath.Base(cmd)) {
			t.Errorf("the runtime stage does not copy %s", filepath.Base(cmd))
		}
	}
}

// dockerCommands are the packages the Dockerfile's go build builds.
func dockerCommands(t *testing.T, df string) []string {
	t.Helper()
	cmds := regexp.MustCompile(`\./(cmd|examples)/[a-z/]+`).FindAllString(df[strings.Index(df, "RUN go build"):], -1)
	if len(cmds) < 4 {
		t.Fatalf("the Dockerfile's go build builds %v, want the worker, the publisher and the two tools", cmds)
	}
	return cmds
}

// The Dockerfile's go build, run twice outside Docker with its flags, gives
// byte-identical binaries.
func TestDockerfile_build_is_reproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every command twice")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not in PATH")
	}
	df := read(t, filepath.Join("..", "Dockerfile"))
	ldflags := regexp.MustCompile(`-ldflags="([^"]+)"`).FindStringSubmatch(df)
	if ldflags == nil {
		t.Fatal("no -ldflags in the Dockerfile")
	}
	flags := strings.ReplaceAll(ldflags[1], "${VERSION}", "0.1.0-test")
	cmds := dockerCommands(t, df)
	build := func() map[string][32]byte {
		out := t.TempDir()
		args := append([]string{"build", "-trimpath", "-ldflags=" + flags, "-o", out + string(filepath.Separator)}, cmds...)
		cmd := exec.Command(goBin, args...)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		sums := map[string][32]byte{}
		for _, c := range cmds {
			b, err := os.ReadFile(filepath.Join(out, filepath.Base(c)))
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(c, "./cmd/") && !bytes.Contains(b, []byte("0.1.0-test")) {
				t.Errorf("%s does not carry the version", c)
			}
			sums[c] = sha256.Sum256(b)
		}
		return sums
	}
	a, b := build(), build()
	for c := range a {
		if a[c] != b[c] {
			t.Errorf("%s differs between two builds", c)
		}
	}
}
