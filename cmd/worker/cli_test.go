package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus"
	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/store"
	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/opstest"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli/clitest"
)

// A CLI model is worker configuration: --cli NAME=COMMAND (repeatable),
// $LIONBUS_CLI (one per line) and --cli-config FILE.
func TestConfig_cli_models(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "clis.json")
	if err := os.WriteFile(file, []byte(`[{"name":"boxed","command":["claude","--model","opus"],"dir":"/tmp","env":["A=1"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		env     string
		want    map[string][]string
		wantErr bool
	}{
		{name: "flags", args: []string{"--cli", "claude=claude --model sonnet", "--cli", "dev=/opt/dev 'two words'"},
			want: map[string][]string{"claude": {"claude", "--model", "sonnet"}, "dev": {"/opt/dev", "two words"}}},
		{name: "environment", env: "a=claude\nb=codex exec", want: map[string][]string{"a": {"claude"}, "b": {"codex", "exec"}}},
		{name: "config file", args: []string{"--cli-config", file}, want: map[string][]string{"boxed": {"claude", "--model", "opus"}}},
		{name: "bad name", args: []string{"--cli", "no name=claude"}, wantErr: true},
		{name: "defined twice", args: []string{"--cli", "a=x", "--cli", "a=y"}, wantErr: true},
		{name: "missing file", args: []string{"--cli-config", filepath.Join(dir, "none.json")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("LIONBUS_CLI", tt.env)
			if tt.env == "" {
				os.Unsetenv("LIONBUS_CLI")
			}
			cfg, err := parseConfig(tt.args, io.Discard, io.Discard)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cmds, err := cfg.cliCommands()
			if err != nil {
				t.Fatal(err)
			}
			if len(cmds) != len(tt.want) {
				t.Fatalf("%d CLIs, want %d", len(cmds), len(tt.want))
			}
			for _, c := range cmds {
				if !slices.Equal(c.Argv, tt.want[c.Name]) {
					t.Errorf("%s: %q, want %q", c.Name, c.Argv, tt.want[c.Name])
				}
			}
		})
	}
}

// The worker started with --cli serves cli:fake: a run streams the fake
// Claude Code CLI's chunks and records its answer.
func TestRun_serves_cli_models(t *testing.T) {
	bin := clitest.Build(t)
	srv := bustest.NewServer(t)
	stdout, stderr, stop := runWorker(t, "--nats", srv.ClientURL(), "--prefix", "clis", "--cli", "fake="+bin, "--name", "w1", "--runlog-dir", "ops-audit")
	waitFor(t, 30*time.Second, "the worker to start", func() bool {
		return strings.Contains(stdout.String(), "serving prefix") || strings.Contains(stderr.String(), "worker:")
	})
	nc, _ := bustest.Connect(t, srv)
	cl, err := client.New(nc, client.Config{Prefix: "clis"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cl.Do(ctx, "branch.create", "", map[string]any{"branch_id": "b1", "chat_model": "cli:fake"}); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_, reply, err := cl.Stream(ctx, "run", "b1", map[string]any{"instruction": "list the files", "stream_persist": true}, func(c ops.Chunk) error {
		if c.Kind == ops.ChunkText {
			text.WriteString(c.Content)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := reply.Result()
	if err != nil || !strings.HasSuffix(text.String(), "a.txt and b.txt.") {
		t.Fatalf("answer %s, text %q", reply.Data, text.String())
	}
	// 0021-D5-06: --runlog-dir is where the persisted run's log went.
	if opstest.RunLog(t, res) == nil || opstest.RunLog(t, res).Dir != "ops-audit" || !strings.HasPrefix(opstest.RunLog(t, res).Snapshot, "clis.runlog.ops-audit.") {
		t.Errorf("run_log %+v, want the directory ops-audit", opstest.RunLog(t, res))
	}
	if code := stop(); code != exitOK {
		t.Fatalf("exit code = %d\nstderr:\n%s", code, stderr)
	}
}

// 0021-D5-06: the run log directory is worker configuration: --runlog-dir,
// else $LIONBUS_RUNLOG_DIR, else ops.DefaultRunLogDir; it reaches the
// service's configuration, and one that is not a subject token is a usage
// error.
func TestConfig_runlog_dir(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     string // "" leaves LIONBUS_RUNLOG_DIR unset
		want    string
		wantErr string
	}{
		{name: "default", want: ops.DefaultRunLogDir},
		{name: "flag", args: []string{"--runlog-dir", "audit"}, want: "audit"},
		{name: "environment", env: "team_a-2", want: "team_a-2"},
		{name: "the flag wins", args: []string{"--runlog-dir", "audit"}, env: "team-a", want: "audit"},
		{name: "a dot", args: []string{"--runlog-dir", "a.b"}, wantErr: `--runlog-dir "a.b"`},
		{name: "a wildcard from the environment", env: ">", wantErr: `--runlog-dir ">"`},
		{name: "empty", args: []string{"--runlog-dir", ""}, wantErr: `--runlog-dir ""`},
		{name: "too long", args: []string{"--runlog-dir", strings.Repeat("d", ops.MaxRunLogDirLength+1)}, wantErr: "--runlog-dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, bc, ok := parseWithEnv(t, "LIONBUS_RUNLOG_DIR", tt.env, tt.args, tt.wantErr)
			if !ok {
				return
			}
			if cfg.RunLogDir != tt.want {
				t.Errorf("RunLogDir %q, want %q", cfg.RunLogDir, tt.want)
			}
			if bc.RunLogDir != tt.want {
				t.Errorf("bus.Config.RunLogDir %q, want %q", bc.RunLogDir, tt.want)
			}
		})
	}
}

// TestConfig_cache: --cache-branches and --cache-bytes (or
// $LIONBUS_CACHE_BYTES) reach the store's configuration, the store's
// defaults without them, and a bound below 1 is a usage error.
func TestConfig_cache(t *testing.T) {
	tests := []struct {
		name          string
		args          []string
		env           string // "" leaves LIONBUS_CACHE_BYTES unset
		branches, max int
		wantErr       string
	}{
		{name: "defaults", branches: store.DefaultCacheBranches, max: store.DefaultCacheBytes},
		{name: "flags", args: []string{"--cache-branches", "10", "--cache-bytes", "1048576"}, branches: 10, max: 1 << 20},
		{name: "environment", env: "4194304", branches: store.DefaultCacheBranches, max: 4 << 20},
		{name: "no branches", args: []string{"--cache-branches", "0"}, wantErr: "--cache-branches 0"},
		{name: "no bytes", args: []string{"--cache-bytes", "-1"}, wantErr: "--cache-bytes -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, bc, ok := parseWithEnv(t, "LIONBUS_CACHE_BYTES", tt.env, tt.args, tt.wantErr)
			if !ok {
				return
			}
			if bc.Store.CacheBranches != tt.branches || bc.Store.CacheBytes != tt.max {
				t.Errorf("store.Config cache %d branches, %d bytes; want %d, %d", bc.Store.CacheBranches, bc.Store.CacheBytes, tt.branches, tt.max)
			}
		})
	}
}

// parseWithEnv parses args with the environment variable key set to env
// ("" leaves it unset) and returns the worker's configuration and the
// service configuration it makes. With wantErr set it checks that parsing
// fails with an error containing it, and reports false.
func parseWithEnv(t *testing.T, key, env string, args []string, wantErr string) (config, bus.Config, bool) {
	t.Helper()
	t.Setenv(key, env)
	if env == "" {
		os.Unsetenv(key)
	}
	cfg, err := parseConfig(args, io.Discard, io.Discard)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err %v, want one with %q", err, wantErr)
		}
		return cfg, bus.Config{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	bc, err := busConfig(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return cfg, bc, true
}
