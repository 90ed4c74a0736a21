// Package buildinfo says which version of a lionbus command is running.
package buildinfo

import "runtime/debug"

// Version returns override when it is set (a command's main.version, set
// at build time with -ldflags "-X main.version=v1.2.3"), else the module
// version from the build information, with the VCS revision when the
// build recorded one.
func Version(override string) string {
	if override != "" {
		return override
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " (" + s.Value[:12] + ")"
		}
	}
	return v
}
