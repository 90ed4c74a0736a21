// Package agentcli holds the tests that run the real coding-agent CLIs
// (Claude Code; see docs/agent-clis.md) through a real worker on an
// in-process NATS server: `run` and operate's run_and_collect middle,
// each CLI pointed at a loopback server of its model API
// (pkg/ops/provider/cli/clitest/modelapi) with scripted answers. The CLIs
// come from `make agent-clis`; without them the tests skip, except in CI.
package agentcli
