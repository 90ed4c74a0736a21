package cli_test

import (
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
)

// ExampleParseCommand reads a worker's --cli flag and shows the command
// line a resumed run of cli:claude executes.
func ExampleParseCommand() {
	cmd, err := cli.ParseCommand(`claude=claude --model sonnet --allowedTools "Bash Read"`)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := cli.New(cmd)
	if err != nil {
		fmt.Println(err)
		return
	}
	model := history.ModelRef{Provider: cli.Name, Model: "claude"}
	fmt.Println(cmd.Name, cmd.Argv, p.IsCLI(model))
	call := ops.Call{Model: model, Resume: "sess-1", Messages: ops.PromptOf([]ops.ChatMessage{
		{Role: history.RoleSystem, Content: "Be brief."},
		{Role: history.RoleUser, Content: "first task"},
		{Role: history.RoleUser, Content: "fix the test"},
	}...)}
	fmt.Printf("%q\n", append(cmd.Argv, cli.Args(call)...))
	// Output:
	// claude [claude --model sonnet --allowedTools Bash Read] true
	// ["claude" "--model" "sonnet" "--allowedTools" "Bash Read" "-p" "fix the test" "--output-format" "stream-json" "--resume" "sess-1" "--system-prompt" "Be brief." "--verbose"]
}
