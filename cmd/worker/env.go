package main

import (
	"flag"
	"fmt"
	"strings"
)

// envPrefix starts the environment variable of every flag.
const envPrefix = "LIONBUS_"

// envName is the environment variable of flag name: "drain-timeout" is
// LIONBUS_DRAIN_TIMEOUT.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// flagsFromEnv sets every flag of fs that was not given on the command line
// from its environment variable, when that is set. lookup is os.LookupEnv
// (a parameter so tests need not change the process environment).
func flagsFromEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	given := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		v, ok := lookup(envName(f.Name))
		if !ok {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("environment %s=%q: %w", envName(f.Name), v, e)
		}
	})
	return err
}
