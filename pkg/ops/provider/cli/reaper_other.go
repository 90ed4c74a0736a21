//go:build !linux

package cli

import (
	"syscall"
	"time"
)

// reaperCommand reports that no subreaper is available: outside Linux the
// CLI runs directly, and only its process group is stopped.
func reaperCommand(argv []string, grace time.Duration) (string, []string, string, bool) {
	return "", nil, "", false
}

func reaperSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
