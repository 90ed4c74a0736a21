//go:build !unix

package main

import "time"

// processCPU is not measured off unix; CPU columns show 0.
func processCPU() time.Duration { return 0 }

// haveCPU reports whether processCPU measures anything here.
const haveCPU = false
