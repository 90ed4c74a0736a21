package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
)

// cliList is the repeatable --cli flag: NAME=COMMAND definitions. A value
// with several lines (from $LIONBUS_CLI) holds one definition per line.
type cliList []string

// String returns the definitions, one per line.
func (l *cliList) String() string { return strings.Join(*l, "\n") }

// Set adds the definitions of v.
func (l *cliList) Set(v string) error {
	for _, line := range strings.Split(v, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if _, err := cli.ParseCommand(line); err != nil {
				return err
			}
			*l = append(*l, line)
		}
	}
	return nil
}

// cliFileEntry is one CLI of a --cli-config file.
type cliFileEntry struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
	Dir     string   `json:"dir"`
	Env     []string `json:"env"`
	// Format is claude, codex or gemini; empty: detected from the command.
	Format string `json:"format"`
}

// cliCommands returns the CLIs of --cli and --cli-config.
func (c config) cliCommands() ([]cli.Command, error) {
	var out []cli.Command
	for _, spec := range c.CLIs {
		cmd, err := cli.ParseCommand(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, cmd)
	}
	if c.CLIConfig != "" {
		b, err := os.ReadFile(c.CLIConfig)
		if err != nil {
			return nil, err
		}
		var entries []cliFileEntry
		if err := json.Unmarshal(b, &entries); err != nil {
			return nil, fmt.Errorf("%s: %w", c.CLIConfig, err)
		}
		for _, e := range entries {
			out = append(out, cli.Command{Name: e.Name, Argv: e.Command, Dir: e.Dir, Env: e.Env, Format: cli.Format(e.Format)})
		}
	}
	if _, err := cli.New(out...); err != nil {
		return nil, err
	}
	return out, nil
}
