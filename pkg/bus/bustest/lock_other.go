//go:build !unix

package bustest

import "testing"

// lockDir does nothing where flock is not available: run one test binary
// at a time there.
func lockDir(testing.TB, string) (unlock func()) { return func() {} }
