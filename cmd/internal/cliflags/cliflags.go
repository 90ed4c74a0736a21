// Package cliflags holds what the lionbus commands share on top of cobra:
// Go flag sets declared as cobra flags, and flag errors with a suggestion.
package cliflags

import (
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lionbus/lionbus/cmd/internal/natsflags"
)

// AddGoFlags declares the flags of fs on pfs. Setting one sets it on fs,
// so that fs.Visit sees the flags given (the others may come from the
// environment).
func AddGoFlags(pfs *pflag.FlagSet, fs *flag.FlagSet) {
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

// ErrorMessage is the one-line message of a flag parsing error of cmd,
// with the flag meant ("did you mean --nats?") when an unknown one is close
// to one of cmd's; a long flag given with one dash (-nats, as Go's flag
// package took it) is matched too.
func ErrorMessage(cmd *cobra.Command, err error) string {
	msg := err.Error()
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	name := ""
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		name = strings.TrimPrefix(msg, "unknown flag: --")
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		_, name, _ = strings.Cut(msg, " in -")
	}
	name, _, _ = strings.Cut(name, "=")
	if s := natsflags.Suggest(name, names); name != "" && s != "" {
		msg += fmt.Sprintf(" (did you mean --%s?)", s)
	}
	return msg
}
