package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/lionbus/lionbus/cmd/internal/buildinfo"
	"github.com/lionbus/lionbus/cmd/internal/cliflags"
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
	cliflags.AddGoFlags(root.Flags(), fs)
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

// flagError turns a flag parsing error into one line, with the flag meant
// when an unknown one is close to a known one.
func flagError(cmd *cobra.Command, err error) error {
	return fmt.Errorf("%s", cliflags.ErrorMessage(cmd, err))
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
