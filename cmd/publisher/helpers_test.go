package main

import (
	"flag"
	"io"
)

type flagT = flag.Flag

func newTestFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addGlobalFlags(fs, o)
	return fs
}
