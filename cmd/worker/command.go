package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lionbus/lionbus/cmd/internal/buildinfo"
	"github.com/lionbus/lionbus/cmd/internal/natsflags"
)

// version is the worker's version: set at build time with
// -ldflags "-X main.version=v1.2.3", else taken from the build information.
var version string

// versionString is the version the version command and --version print.
func versionString() string { return buildinfo.Version(version) }

// newCommand is the worker's command line: the flags of fs, help, version
// and completion. serve is called with the arguments left when the worker
// is to run; help, version and completion write to stdout.
func newCommand(fs *flag.FlagSet, stdout, stderr io.Writer, serve func(args []string) error) *cobra.Command {
	root := &cobra.Command{
		Use:                        "worker [flags]",
		Short:                      "Run a lionbus worker",
		Long:                       workerLong,
		Example:                    workerExamples,
		Version:                    versionString(),
		SuggestionsMinimumDistance: 2,
		SilenceErrors:              true,
		SilenceUsage:               true,
		// Arguments are checked by serve: "unexpected argument".
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error { return serve(args) },
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	addGoFlags(root.Flags(), fs)
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the worker's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "worker version %s\n", versionString())
		},
	})
	return root
}

// addGoFlags declares the flags of fs on pfs. Setting one sets it on fs,
// so that fs.Visit sees the flags given (the others come from the
// environment).
func addGoFlags(pfs *pflag.FlagSet, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		pf := pflag.PFlagFromGoFlag(f)
		typ := pf.Value.Type()
		switch typ {
		case "bool", "duration", "float64", "int", "int64", "string", "uint", "uint64":
		default:
			typ = "string" // a flag.Value of the command's own (repeatable flags)
		}
		pf.Value = goSetter{fs: fs, name: f.Name, typ: typ, value: f.Value}
		pfs.AddFlag(pf)
	})
}

// goSetter is a flag of a Go flag set as a pflag value: Set goes through
// the flag set.
type goSetter struct {
	fs    *flag.FlagSet
	name  string
	typ   string
	value flag.Value
}

func (g goSetter) String() string     { return g.value.String() }
func (g goSetter) Set(v string) error { return g.fs.Set(g.name, v) }
func (g goSetter) Type() string       { return g.typ }

// flagError turns a flag parsing error into one line, with the flag meant
// when an unknown one is close to a known one.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	name := ""
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		name = strings.TrimPrefix(msg, "unknown flag: --")
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		// -nats: a long flag with one dash, as Go's flag package took it.
		_, name, _ = strings.Cut(msg, " in -")
	}
	name, _, _ = strings.Cut(name, "=")
	if s := natsflags.Suggest(name, names); name != "" && s != "" {
		msg += fmt.Sprintf(" (did you mean --%s?)", s)
	}
	return fmt.Errorf("%s", msg)
}

// warnEnv prints a warning for every LIONBUS_* variable of environ that
// looks like a misspelling of one of the worker's flags.
func warnEnv(environ []string, stderr io.Writer) {
	var names []string
	newFlagSet(&config{}, io.Discard).VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	for _, w := range natsflags.MisspelledEnv(environ, names, nil) {
		fmt.Fprintf(stderr, "worker: warning: %s\n", w)
	}
}

// environ is os.Environ; a variable so that tests may replace it.
var environ = os.Environ
