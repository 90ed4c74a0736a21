package tools

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/wire"
)

// openBucket opens the KV bucket cfg.Bucket, creating it with cfg when it
// does not exist (an existing bucket keeps its own settings); what names
// it in errors.
func openBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, what string) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, cfg.Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("tools: %s bucket %s: %w", what, cfg.Bucket, err)
	}
	return kv, nil
}

// openRegistryBucket opens the registry bucket, creating it (with the
// settings of the worker's provisioning) when it does not exist.
func openRegistryBucket(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	return openBucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: bucket, Description: "lionbus tool registry", History: 1, Storage: jetstream.FileStorage,
	}, "registry")
}

// Registry is a cached, live view of the tool registry bucket: it watches
// the bucket and keeps every valid entry. An invalid entry is skipped (and
// logged). Safe for concurrent use. Create one with [OpenRegistry].
type Registry struct {
	kv      jetstream.KeyValue
	watcher jetstream.KeyWatcher
	log     zerolog.Logger
	ready   chan struct{}
	done    chan struct{}

	compile Compiler // nil: entries are checked for their shape only

	mu      sync.RWMutex
	entries map[string]*Entry
}

// RegistryOption changes how [OpenRegistry] reads entries.
type RegistryOption func(*Registry)

// WithRegistryCompiler has the registry compile each entry's parameters
// with compile and skip (and log) an entry whose parameters do not
// compile, as well as the invalid ones. Without it, entries are checked
// for their shape only ([DecodeEntry]). The worker gives
// toolschema.Compile.
func WithRegistryCompiler(compile Compiler) RegistryOption {
	return func(r *Registry) { r.compile = compile }
}

// OpenRegistry opens the registry bucket "<prefix>_tools" (creating it when
// missing) and starts watching it; it returns once the current entries are
// loaded, or ctx's error. log receives the registry's records; the zero
// Logger discards them. Close stops the watch.
func OpenRegistry(ctx context.Context, js jetstream.JetStream, prefix string, log zerolog.Logger, opts ...RegistryOption) (*Registry, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	kv, err := openRegistryBucket(ctx, js, protocol.Subjects{Prefix: prefix}.ToolsBucket())
	if err != nil {
		return nil, err
	}
	w, err := kv.WatchAll(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("tools: watch the registry: %w", err)
	}
	r := &Registry{kv: kv, watcher: w, ready: make(chan struct{}), done: make(chan struct{}), entries: map[string]*Entry{}, log: log}
	for _, o := range opts {
		o(r)
	}
	go r.follow()
	select {
	case <-r.ready:
		return r, nil
	case <-ctx.Done():
		_ = w.Stop()
		return nil, ctx.Err()
	}
}

// follow applies the watch's updates until it stops.
func (r *Registry) follow() {
	defer close(r.done)
	loaded := false
	for e := range r.watcher.Updates() {
		if e == nil {
			if !loaded {
				loaded = true
				close(r.ready)
			}
			continue
		}
		r.apply(e)
	}
	if !loaded {
		close(r.ready)
	}
}

// apply folds one bucket entry into the cache.
func (r *Registry) apply(e jetstream.KeyValueEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(r.entries, e.Key())
		return
	}
	ent, err := decodeEntry(e.Key(), e.Value(), r.compile)
	if err != nil {
		r.log.Warn().Err(err).Str("tool", e.Key()).Msg("registry entry skipped")
		delete(r.entries, e.Key())
		return
	}
	r.entries[e.Key()] = ent
}

// Close stops watching the bucket.
func (r *Registry) Close() error {
	err := r.watcher.Stop()
	<-r.done
	return err
}

// Lookup returns the entry of the named tool. A name the cache does not
// hold is read from the bucket, so a tool registered a moment ago is
// found. It returns an error wrapping wire.ErrNoTool when there is none.
func (r *Registry) Lookup(ctx context.Context, name string) (*Entry, error) {
	r.mu.RLock()
	e, ok := r.entries[name]
	r.mu.RUnlock()
	if ok {
		return e, nil
	}
	if !wire.ValidID(name) {
		return nil, fmt.Errorf("%w %q", wire.ErrNoTool, wire.Truncate(name, wire.MaxIDLength))
	}
	kve, err := r.kv.Get(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w %q (not in the registry)", wire.ErrNoTool, name)
	}
	if err != nil {
		return nil, fmt.Errorf("tools: registry lookup %s: %w", name, err)
	}
	e, err = decodeEntry(name, kve.Value(), r.compile)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", wire.ErrNoTool, name, err)
	}
	return e, nil
}

// List returns the registered tools, sorted by name.
func (r *Registry) List() []Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Entry, 0, len(r.entries))
	for _, k := range slices.Sorted(maps.Keys(r.entries)) {
		out = append(out, *r.entries[k])
	}
	return out
}

// DescribeTools returns the specs of the named tools, in order, for a
// model: name, description and parameters schema. A tool that is not
// registered is described by its name alone. It implements
// ops.ToolDescriber.
func (r *Registry) DescribeTools(ctx context.Context, names []string) []wire.ToolSpec {
	out := make([]wire.ToolSpec, 0, len(names))
	for _, n := range names {
		spec := wire.ToolSpec{Name: n}
		if e, err := r.Lookup(ctx, n); err == nil {
			spec.Description, spec.Parameters = e.Description, e.Parameters
		}
		out = append(out, spec)
	}
	return out
}

// ReadRegistry reads the registry bucket "<prefix>_tools" once, neither
// creating nor watching it: its valid entries sorted by name, at most
// limit of them (the first by key; 0 means all), and how many it skipped
// as invalid. A missing bucket holds no entries. It is for a reader that
// only looks, such as the console; a caller of tools keeps an
// OpenRegistry instead.
func ReadRegistry(ctx context.Context, js jetstream.JetStream, prefix string, limit int) (entries []Entry, invalid int, err error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	bucket := protocol.Subjects{Prefix: prefix}.ToolsBucket()
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("tools: registry bucket %s: %w", bucket, err)
	}
	lister, err := kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("tools: registry bucket %s: %w", bucket, err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	_ = lister.Stop()
	slices.Sort(keys)
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, 0, fmt.Errorf("tools: registry entry %s: %w", k, err)
		}
		ent, err := DecodeEntry(k, e.Value())
		if err != nil {
			invalid++
			continue
		}
		entries = append(entries, *ent)
	}
	return entries, invalid, nil
}
