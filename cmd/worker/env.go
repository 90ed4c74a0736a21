package main

import (
	"flag"

	"github.com/lionbus/lionbus/cmd/internal/natsflags"
)

// flagsFromEnv sets every flag of fs that was not given on the command line
// from its environment variable (LIONBUS_<FLAG>), when that is set. lookup
// is os.LookupEnv (a parameter so tests need not change the process
// environment).
func flagsFromEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	given := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return natsflags.SetFromEnv(fs, func(name string) bool { return !given[name] }, lookup)
}
