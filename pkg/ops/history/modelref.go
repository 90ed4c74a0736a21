package history

import "github.com/lionbus/lionbus/pkg/wire"

// ModelRef names a model: a provider, a model name and provider options
// ([wire.ModelRef]).
type ModelRef = wire.ModelRef

// ParseModelRef parses the string form "provider:model".
func ParseModelRef(s string) (ModelRef, error) { return wire.ParseModelRef(s) }
