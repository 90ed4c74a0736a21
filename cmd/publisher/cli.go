package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lionbus/lionbus/cmd/internal/buildinfo"
	"github.com/lionbus/lionbus/cmd/internal/cliflags"
	"github.com/lionbus/lionbus/cmd/internal/natsflags"
)

// version is the publisher's version: set at build time with
// -ldflags "-X main.version=v1.2.3", else taken from the build information.
var version string

// versionString is the version the version command and --version print.
func versionString() string { return buildinfo.Version(version) }

// app is one publisher invocation: the options its flags fill, where it
// reads and writes, and the exit code its command left.
type app struct {
	ctx            context.Context
	o              *options
	global         *flag.FlagSet // the global flags, the root's persistent flags
	stdin          io.Reader
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	output         string // -o of the commands that print a table
	code           int
}

// usageErr is a command-line error cobra found (unknown command or flag,
// bad flag value), printed on one line.
type usageErr struct{ msg string }

func (e *usageErr) Error() string { return e.msg }

// newRoot builds the command tree.
func (a *app) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:     "publisher",
		Short:   "Send lionbus requests over NATS and print their answers",
		Long:    rootLong,
		Example: rootExamples,
		Version: versionString(),
		// Suggest commands one or two edits away from an unknown one.
		SuggestionsMinimumDistance: 2,
		SilenceErrors:              true,
		SilenceUsage:               true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(a.stderr, cmd.UsageString())
			a.code = exitUsage
			return nil
		},
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(flagError)
	cliflags.AddGoFlags(root.PersistentFlags(), a.global)
	_ = root.RegisterFlagCompletionFunc(contextFlag, func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return contextNames(cmd, nil, toComplete)
	})
	root.AddGroup(&cobra.Group{ID: "requests", Title: "Requests:"}, &cobra.Group{ID: "admin", Title: "Administration:"})

	branch := a.group("branch", "Administer branches: create, get, history, clone, fork, forks, edit, clear, delete, list, export, verify, import",
		errors.New("branch needs a subcommand: create, get, history, clone, fork, forks, edit, clear, delete, list, export, verify or import"),
		func(name string) string { return fmt.Sprintf("unknown command %q", "branch "+name) })
	branch.GroupID = "requests"
	root.AddCommand(branch)
	for _, c := range commands {
		cmd := a.requestCommand(c)
		if sub, ok := strings.CutPrefix(c.name, "branch "); ok {
			cmd.Use = strings.TrimSpace(sub + " " + c.args)
			branch.AddCommand(cmd)
			continue
		}
		cmd.GroupID = "requests"
		root.AddCommand(cmd)
	}
	branch.AddCommand(a.tabular(a.leaf("list", "List the branches that have history", branchListLong, a.branchList)))
	branch.AddCommand(
		a.leaf("export BRANCH", "Write a branch's history as a verifiable export (JSON lines)", historyLong, a.branchExport),
		a.leaf("verify FILE", "Check an export: names the first edited, dropped or reordered line", historyLong, a.branchVerify),
		a.leaf("import FILE", "Verify an export, then rebuild its branch here (branch.import)", historyLong, a.branchImport),
		a.leaf("edit BRANCH MESSAGE INSTRUCTION", "Edit and resend: fork before the exchange MESSAGE opens, send INSTRUCTION on the fork", editLong, a.branchEdit),
	)

	for _, cmd := range []*cobra.Command{
		a.leaf("result ID", "Print the stored answer of request ID (--wait to wait for it)", resultLong, a.result),
		a.leaf("cancel ID", "Ask the workers to cancel request ID (it is answered \"canceled\")", cancelLong, a.cancel),
		a.leaf("watch BRANCH", "Follow a branch's events live", watchLong, a.watch),
		a.leaf("console", "Serve the web console (branches, timelines, live runs) on a local address", consoleLong, a.consoleCmd),
		a.leaf("changes", "Print the change feed: every branch's history events in commit order (JSON lines)", changesLong, a.changes),
	} {
		cmd.GroupID = "requests"
		root.AddCommand(cmd)
	}

	dlq := a.group("dlq", "Dead letters: requests that failed on every delivery or could not be answered", nil,
		func(name string) string {
			return fmt.Sprintf("dlq: unknown subcommand %q (list, show, retry or delete)", name)
		})
	dlq.Long = dlqLong
	dlq.AddCommand(a.tabular(a.leaf("list", "One line per dead letter, oldest first", "", a.dlqList)))
	for _, sub := range []struct{ name, short string }{
		{"show", "The reason, the request's headers and its body"},
		{"retry", "Publish the request again as a new request and remove the entry"},
		{"delete", "Remove the entry"},
	} {
		dlq.AddCommand(a.leaf(sub.name+" KEY", sub.short, "", a.dlqKey(sub.name)))
	}

	approvals := a.group("approvals", "Parked tool-call approvals: list, show, approve, deny",
		errors.New("approvals needs a subcommand: list, show, approve or deny"),
		func(name string) string {
			return fmt.Sprintf("unknown approvals subcommand %q: want list, show, approve or deny", name)
		})
	approvals.Long = approvalsLong
	approvals.AddCommand(
		a.tabular(a.leaf("list", "One line per pending approval (--all: decided ones too)", "", a.approvalsList)),
		a.leaf("show ID", "One approval as JSON", "", a.approvalsShow),
		a.leaf("approve ID", "Approve a parked tool call (--args: with edited arguments)", "", a.approvalsAnswer(true)),
		a.leaf("deny ID", "Deny a parked tool call", "", a.approvalsAnswer(false)),
	)

	budgets := a.group("budget", "The fleet's model budgets: set, get, ls, rm",
		errors.New("budget needs a subcommand: set, get, ls or rm"),
		func(name string) string {
			return fmt.Sprintf("unknown budget subcommand %q: want set, get, ls or rm", name)
		})
	budgets.Long = budgetLong
	budgets.AddCommand(
		a.leaf("set MODEL", "Set a model's limits for the whole fleet", "", a.budgetSet),
		a.leaf("get MODEL", "Print a model's limits as JSON", "", a.budgetCmd("get")),
		a.leaf("ls", "One line per model with a budget", "", a.budgetCmd("ls")),
		a.leaf("rm MODEL", "Remove a model's budget", "", a.budgetCmd("rm")),
	)
	batches := a.group("batch", "Batches: submit, get, watch, results, cancel, retry, max-cost, list",
		errors.New("batch needs a subcommand: submit, get, watch, results, cancel, retry, max-cost or list"),
		func(name string) string {
			return fmt.Sprintf("unknown batch subcommand %q: want submit, get, watch, results, cancel, retry, max-cost or list", name)
		})
	batches.Long = batchLong
	batches.AddCommand(
		a.leaf("submit FILE", "Submit a JSONL file of items as a batch; prints its id", "", a.batchSubmit),
		a.leaf("get ID", "Print a batch's record (state, counts) as JSON", "", a.batchCmd("get")),
		a.leaf("watch ID", "Show a batch's progress live until it ends", "", a.batchWatch),
		a.leaf("results ID", "Print a batch's results as JSONL, in completion order", "", a.batchResults),
		a.leaf("cancel ID", "Start no new item of a batch and cancel those in flight", "", a.batchCmd("cancel")),
		a.leaf("retry ID", "Run a batch's failed and expired items again", "", a.batchRetry),
		a.leaf("max-cost ID USD", "Set a batch's cost ceiling (0: none), running or ended", "", a.batchMaxCost),
		a.leaf("list", "One line per batch", "", a.batchList),
	)
	tools := a.group("tools", "The tool registry; call a tool directly",
		errors.New("tools needs a subcommand: list, show or call"),
		func(name string) string {
			return fmt.Sprintf("unknown tools subcommand %q: want list, show or call", name)
		})
	tools.Long = toolsLong
	tools.AddCommand(
		a.tabular(a.leaf("list", "The registered tools: name, version, subject, description", "", a.toolsCmd("list"))),
		a.leaf("show NAME", "One tool's registry entry, with its parameters schema", "", a.toolsCmd("show")),
		a.leaf("call NAME", "Invoke a tool directly (lionbus.tool.invoke on its subject)", "", a.toolsCmd("call")),
	)

	lndl := &cobra.Command{
		Use:                "lndl STAGE",
		Short:              "LNDL tools (publisher lndl --help)",
		Long:               lndlUsage,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			// lndl parses its own flags, after the stage; global flags
			// before "lndl" have no use there.
			a.code = runLNDL(a.ctx, skipFlags(args, cmd.InheritedFlags()), a.stdin, a.stdout, a.stderr)
			return nil
		},
	}
	batches.GroupID = "requests"
	root.AddCommand(batches)
	for _, cmd := range []*cobra.Command{dlq, approvals, budgets, tools, lndl, a.contextCommand()} {
		cmd.GroupID = "admin"
		root.AddCommand(cmd)
	}
	root.SetHelpCommand(a.helpCommand(root))
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the publisher's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "publisher version %s\n", versionString())
		},
	})
	return root
}

// helpCommand is `publisher help [COMMAND...]`: the help of a command, on
// stdout; an unknown one is a usage error with a suggestion.
func (a *app) helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help prints the help of any command: publisher help branch create.",
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			cmd, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() || c.Name() == "help" {
					names = append(names, c.Name()+"\t"+c.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				parent := root
				if err == nil {
					parent = cmd
				}
				name := strings.Join(args, " ")
				msg := fmt.Sprintf("no help for %q: no such command", name)
				if len(rest) > 0 {
					if s := suggestCommand(parent, rest[0]); s != "" {
						msg += fmt.Sprintf(" (did you mean %q?)", strings.TrimSpace(strings.TrimPrefix(parent.CommandPath(), root.Name())+" "+s))
					}
				}
				return &usageErr{msg}
			}
			return cmd.Help()
		},
	}
}

// leaf is a command that runs: define declares its own flags on fs and
// returns what runs it with its positional arguments, after the options
// are complete (environment, checks).
func (a *app) leaf(use, short, long string, define func(fs *flag.FlagSet) func(args []string) int) *cobra.Command {
	fs := flag.NewFlagSet(use, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	runArgs := define(fs)
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code, ok := a.prepare(cmd); !ok {
				a.code = code
				return nil
			}
			a.code = runArgs(args)
			return nil
		},
	}
	cliflags.AddGoFlags(cmd.Flags(), fs)
	return cmd
}

// tabular adds -o json|table to a command that prints a table.
func (a *app) tabular(cmd *cobra.Command) *cobra.Command {
	cmd.Flags().StringVarP(&a.output, "output", "o", "", "output format: table or json (-o json is --json)")
	return cmd
}

// group is a command made of subcommands. Without one it fails with none
// (or prints its usage on stderr when none is nil); an unknown one fails
// with unknown's message and a suggestion.
func (a *app) group(use, short string, none error, unknown func(name string) string) *cobra.Command {
	return &cobra.Command{
		Use:                        use,
		Short:                      short,
		SuggestionsMinimumDistance: 2,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) > 0:
				msg := unknown(args[0])
				if s := suggestCommand(cmd, args[0]); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", use+" "+s)
				}
				return &usageErr{msg + "; see '" + cmd.CommandPath() + " --help'"}
			case none != nil:
				a.code = usageError(a.stderr, none)
			default:
				fmt.Fprint(a.stderr, cmd.UsageString())
				a.code = exitUsage
			}
			return nil
		},
	}
}

// requestCommand is the command of c: it sends one request.
func (a *app) requestCommand(c command) *cobra.Command {
	use := c.name
	if c.args != "" {
		use += " " + c.args
	}
	return a.leaf(use, upperFirst(c.summary), "", func(fs *flag.FlagSet) func([]string) int {
		apply := c.define(fs)
		return func(args []string) int {
			req := &request{branch: a.o.Branch, data: map[string]any{}}
			if a.o.Data != "" {
				var err error
				if req.data, err = readData(a.o.Data, a.stdin); err != nil {
					return usageError(a.stderr, err)
				}
			}
			if err := apply(req, args); err != nil {
				return usageError(a.stderr, err)
			}
			return send(a.ctx, a.o, req, a.stdout, a.stderr)
		}
	})
}

// prepare completes the options of a command about to run: the connection
// settings the command line did not give come from the environment; then
// they are checked. When ok is false the command ends with code.
func (a *app) prepare(cmd *cobra.Command) (code int, ok bool) {
	given := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { given[f.Name] = true })
	switch a.output {
	case "":
	case "json":
		a.o.JSON = true
	case "table":
		if a.o.JSON {
			return usageError(a.stderr, errors.New("--json and -o table exclude each other")), false
		}
	default:
		return usageError(a.stderr, fmt.Errorf("-o %q: want table or json", a.output)), false
	}
	if err := a.applyContext(given); err != nil {
		return usageError(a.stderr, err), false
	}
	if err := globalFromEnv(a.global, given, envFlags, a.lookupEnv); err != nil {
		return usageError(a.stderr, err), false
	}
	if err := a.o.validate(); err != nil {
		return usageError(a.stderr, err), false
	}
	return exitOK, true
}

// unknownCommand is the error for an unknown subcommand of cmd.
func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if s := suggestCommand(cmd, name); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return &usageErr{msg + "; see '" + cmd.CommandPath() + " --help'"}
}

// suggestCommand returns the subcommand of cmd closest to name, or "".
func suggestCommand(cmd *cobra.Command, name string) string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if s := natsflags.Suggest(name, names); s != "" {
		return s
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		return s[0]
	}
	return ""
}

// flagError turns a flag parsing error into one line, with the flag meant
// when an unknown one is close to a known one.
func flagError(cmd *cobra.Command, err error) error {
	return &usageErr{cliflags.ErrorMessage(cmd, err) + "; see '" + cmd.CommandPath() + " --help'"}
}

// skipFlags returns args without the flags of fs (and their values) that
// lead them.
func skipFlags(args []string, fs *pflag.FlagSet) []string {
	for len(args) > 0 {
		name, hasValue := strings.CutPrefix(args[0], "--")
		if !hasValue || name == "" {
			return args
		}
		name, _, withValue := strings.Cut(name, "=")
		f := fs.Lookup(name)
		if f == nil {
			return args
		}
		if !withValue && f.NoOptDefVal == "" && len(args) > 1 {
			args = args[1:] // the value
		}
		args = args[1:]
	}
	return args
}

// upperFirst returns s with its first letter in upper case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// warnEnv prints a warning for every LIONBUS_* variable of environ that
// looks like a misspelling of one the publisher reads.
func warnEnv(environ []string, stderr io.Writer) {
	var names []string
	for name := range envFlags {
		names = append(names, name)
	}
	for _, w := range natsflags.MisspelledEnv(environ, names, []string{natsflags.EnvName(contextFlag)}) {
		fmt.Fprintf(stderr, "publisher: warning: %s\n", w)
	}
}

// environ is os.Environ; a variable so that tests may replace it.
var environ = os.Environ
