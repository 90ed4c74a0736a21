//go:build unix

package bustest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// lockDir takes an exclusive lock on dir (the file .test-lock in it),
// waiting for other processes holding it.
func lockDir(t testing.TB, dir string) (unlock func()) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, ".test-lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("bustest: lock %s: %v", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		t.Fatalf("bustest: lock %s: %v", dir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}
}
