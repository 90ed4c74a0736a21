// Package cli is the model provider of coding-agent CLIs: a model
// "cli:NAME" runs the command configured as NAME (the worker's
// --cli NAME=COMMAND) as a subprocess and reads its output, one JSON
// object per line, normalised into chunks: system (with the session id),
// thinking, text, tool_use, tool_result, result (usage and cost) and
// error. Three formats are read ([Format]): Claude Code's
// `--output-format stream-json` ([Decoder]), the Codex CLI's `exec --json`
// ([CodexDecoder]) and the Gemini CLI's `--output-format stream-json`
// ([GeminiDecoder]); docs/agent-clis.md says how to configure each.
//
// A request never chooses what runs: the command line, working directory
// and environment are the worker's; the request supplies the prompt and,
// through its branch, the session id passed back with --resume.
//
// Each call runs one process in its own process group. Whatever ends the
// call (the output ends, the consumer stops, the context is cancelled or
// its deadline passes), the group is stopped (SIGTERM, then SIGKILL after
// Provider.KillGrace) and the process is reaped before the call returns,
// so no zombie and no orphan outlives it. On Linux the CLI runs under a
// subreaper (the worker's executable run again) that also ends the
// processes it started outside its group, as Claude Code's Bash commands
// are (reaper_linux.go).
package cli
