// Package budget meters model calls against per-model budgets: requests
// and tokens per window and calls in flight. It is transport-free: a
// [Ledger] admits calls in arrival order per key, [Wrap] puts a ledger in
// front of any ops.Provider (reserving the prompt estimate plus the call's
// output ceiling, reconciling from the reported usage, learning the
// provider's rate-limit headers and pricing the call), and package
// bus/budget shares limits, the fleet's split of them and learned pauses
// across workers over NATS. See docs/budgets.md.
package budget
