//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU returns the user plus system CPU time this process has used,
// every goroutine counted: the embedded server's, both workers' and the
// clients'.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// haveCPU reports whether processCPU measures anything here.
const haveCPU = true
