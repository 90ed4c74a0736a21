// Package budgetkv reads and writes the fleet's model budgets in the
// budgets KV bucket (<prefix>_budgets), whose values are
// [wire.BudgetEntry] under [wire.BudgetKey] keys. Every worker watches the
// bucket (package bus/budget), so what Set writes applies to the whole
// fleet within a moment. The package links no engine: the publisher and
// any operator tool use it.
package budgetkv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Set writes the fleet limits of ref, a model reference or provider key.
func Set(ctx context.Context, kv jetstream.KeyValue, ref string, l wire.BudgetLimits) error {
	if ref == "" {
		return fmt.Errorf("%w: empty model reference", wire.ErrBadBudgetKey)
	}
	if err := l.Validate(); err != nil {
		return err
	}
	raw, err := json.Marshal(wire.BudgetEntry{Key: ref, Limits: l})
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, wire.BudgetKey(ref), raw)
	return err
}

// Create writes the fleet limits of ref unless the bucket holds some
// already; it reports whether it wrote them.
func Create(ctx context.Context, kv jetstream.KeyValue, ref string, l wire.BudgetLimits) (bool, error) {
	if err := l.Validate(); err != nil {
		return false, err
	}
	raw, err := json.Marshal(wire.BudgetEntry{Key: ref, Limits: l})
	if err != nil {
		return false, err
	}
	if _, err := kv.Create(ctx, wire.BudgetKey(ref), raw); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// Get returns the fleet limits of ref, with an error wrapping
// jetstream.ErrKeyNotFound when none are set.
func Get(ctx context.Context, kv jetstream.KeyValue, ref string) (wire.BudgetLimits, error) {
	e, err := kv.Get(ctx, wire.BudgetKey(ref))
	if err != nil {
		return wire.BudgetLimits{}, err
	}
	return Decode(e.Value())
}

// Decode decodes one value of the bucket.
func Decode(raw []byte) (wire.BudgetLimits, error) {
	var ent wire.BudgetEntry
	if err := json.Unmarshal(raw, &ent); err != nil {
		return wire.BudgetLimits{}, fmt.Errorf("budget: entry: %w", err)
	}
	return ent.Limits, ent.Limits.Validate()
}

// Delete removes the fleet limits of ref: the model is unlimited again.
func Delete(ctx context.Context, kv jetstream.KeyValue, ref string) error {
	return kv.Delete(ctx, wire.BudgetKey(ref))
}

// List returns every budget of the bucket, by model reference. Keys that
// are not budget keys are skipped.
func List(ctx context.Context, kv jetstream.KeyValue) (map[string]wire.BudgetLimits, error) {
	out := map[string]wire.BudgetLimits{}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return out, nil
		}
		return nil, err
	}
	for k := range lister.Keys() {
		ref, err := wire.BudgetRef(k)
		if err != nil {
			continue
		}
		l, err := Get(ctx, kv, ref)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("budget: %s: %w", ref, err)
		}
		out[ref] = l
	}
	return out, nil
}
