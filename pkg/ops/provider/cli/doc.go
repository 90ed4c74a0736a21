// Package cli is the model provider of coding-agent CLIs: a model
// "cli:NAME" runs the command configured as NAME (the worker's
// --cli NAME=COMMAND) as a subprocess and reads its Claude Code
// `--output-format stream-json` output, one JSON object per line,
// normalised into chunks ([Decoder]): system (with the session id),
// thinking, text, tool_use, tool_result, result (usage and cost) and
// error.
//
// A request never chooses what runs: the command line, working directory
// and environment are the worker's; the request supplies the prompt and,
// through its branch, the session id passed back with --resume.
//
// Each call runs one process in its own process group. Whatever ends the
// call (the output ends, the consumer stops, the context is cancelled or
// its deadline passes), the group is stopped (SIGTERM, then SIGKILL after
// Provider.KillGrace) and the process is reaped before the call returns,
// so no zombie and no orphan outlives it.
package cli
