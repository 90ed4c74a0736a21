package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// DefaultResultWindow is how long the SDK remembers the result of an
// invocation by its idempotency key: a repeated invocation within it is
// answered with the first result, without running the handler. Past it the
// record is gone and a repeated invocation runs the handler again.
const DefaultResultWindow = 24 * time.Hour

// claimGrace is how long past an invocation's deadline its claim on a key
// holds: a replica that died while running the handler leaves a claim that
// another may take over only after it.
const claimGrace = 5 * time.Second

// ResultsBucket returns the name of the KV bucket of remembered results
// under prefix: "<prefix>_tool_results".
func ResultsBucket(prefix string) string {
	return protocol.Subjects{Prefix: prefix}.ToolResultsBucket()
}

// record is the value of a key in the results bucket.
type record struct {
	// Running is true while a replica runs the handler; Until is when its
	// claim lapses.
	Running bool      `json:"running,omitempty"`
	Until   time.Time `json:"until,omitzero"`
	// Outcome is the first result, once there is one.
	Outcome *wire.ToolOutcome `json:"outcome,omitempty"`
}

// resultStore remembers outcomes by tool and idempotency key in a KV
// bucket shared by every replica.
type resultStore struct {
	kv jetstream.KeyValue
}

// openResults opens the results bucket, creating it with a max age of
// window when it does not exist. An existing bucket keeps its own window.
func openResults(ctx context.Context, js jetstream.JetStream, bucket string, window time.Duration) (*resultStore, error) {
	kv, err := openBucket(ctx, js, jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: "lionbus tool results by idempotency key",
		History:     1,
		TTL:         window,
		Storage:     jetstream.FileStorage,
	}, "results")
	if err != nil {
		return nil, err
	}
	return &resultStore{kv: kv}, nil
}

// resultKey is the bucket key of an idempotency key of a tool: the key is
// hashed, so any string may be one.
func resultKey(tool, key string) string {
	sum := sha256.Sum256([]byte(key))
	return tool + "." + hex.EncodeToString(sum[:])
}

// claim is a replica's hold on a key while its handler runs.
type claim struct {
	key string
	rev uint64
}

// begin returns the remembered outcome of k, or a claim to run the handler
// for it until until. When another replica holds the claim, it waits for
// that replica's outcome, taking the claim over if it lapses first. It
// returns ctx's error when ctx ends while waiting.
func (s *resultStore) begin(ctx context.Context, k string, until time.Time) (*wire.ToolOutcome, *claim, error) {
	running, err := json.Marshal(record{Running: true, Until: until.UTC()})
	if err != nil {
		return nil, nil, err
	}
	for {
		rev, err := s.kv.Create(ctx, k, running)
		if err == nil {
			return nil, &claim{key: k, rev: rev}, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, nil, err
		}
		// The common repeat: the first result is there already, one read
		// answers it, no watch needed.
		if e, err := s.kv.Get(ctx, k); err == nil {
			var r record
			if json.Unmarshal(e.Value(), &r) == nil && r.Outcome != nil {
				return r.Outcome, nil, nil
			}
		}
		out, c, retry, err := s.await(ctx, k, running)
		if err != nil || !retry {
			return out, c, err
		}
	}
}

// await watches k, held by another replica, until it has an outcome (which
// it returns), its claim lapses (it takes the claim over), or it is
// deleted (retry: the holder gave up; try to create it again).
func (s *resultStore) await(ctx context.Context, k string, running []byte) (out *wire.ToolOutcome, c *claim, retry bool, err error) {
	w, err := s.kv.Watch(ctx, k)
	if err != nil {
		return nil, nil, false, err
	}
	defer func() { _ = w.Stop() }()
	lapse := time.NewTimer(time.Hour)
	defer lapse.Stop()
	var last jetstream.KeyValueEntry
	for {
		select {
		case <-ctx.Done():
			return nil, nil, false, ctx.Err()
		case <-lapse.C:
			if last == nil {
				continue
			}
			rev, err := s.kv.Update(ctx, k, running, last.Revision())
			if err == nil {
				return nil, &claim{key: k, rev: rev}, false, nil
			}
			return nil, nil, true, nil // changed meanwhile: look again
		case e, ok := <-w.Updates():
			if !ok {
				return nil, nil, true, nil
			}
			if e == nil {
				continue // the end of the initial values
			}
			if e.Operation() != jetstream.KeyValuePut {
				return nil, nil, true, nil
			}
			var r record
			if err := json.Unmarshal(e.Value(), &r); err != nil {
				return nil, nil, false, fmt.Errorf("tools: result record %s: %w", k, err)
			}
			if r.Outcome != nil {
				return r.Outcome, nil, false, nil
			}
			last = e
			lapse.Reset(max(time.Until(r.Until), 0))
		}
	}
}

// finish stores the outcome under c's key, if c still holds it.
func (s *resultStore) finish(ctx context.Context, c *claim, out wire.ToolOutcome) error {
	v, err := json.Marshal(record{Outcome: &out})
	if err != nil {
		return err
	}
	_, err = s.kv.Update(ctx, c.key, v, c.rev)
	return err
}

// abandon removes c's claim without an outcome, so that the next
// invocation of the key runs the handler.
func (s *resultStore) abandon(ctx context.Context, c *claim) error {
	return s.kv.Delete(ctx, c.key, jetstream.LastRevision(c.rev))
}
