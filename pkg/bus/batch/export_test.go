package batch

// SetMaxInMemoryInput sets the largest input read into memory, and returns
// the function that restores it.
func SetMaxInMemoryInput(n uint64) (restore func()) {
	old := maxInMemoryInput
	maxInMemoryInput = n
	return func() { maxInMemoryInput = old }
}
