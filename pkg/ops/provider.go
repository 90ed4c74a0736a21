package ops

import (
	"github.com/lionbus/lionbus/pkg/ops/provider"
	"github.com/lionbus/lionbus/pkg/wire"
)

// The model-provider seam is package provider's; these names are its.

// Provider calls a model ([provider.Provider]).
type Provider = provider.Provider

// StreamingProvider is a [Provider] that can also stream its answer as
// chunks ([provider.StreamingProvider]).
type StreamingProvider = provider.StreamingProvider

// CLIProvider is a [StreamingProvider] whose models run as a coding-agent
// CLI ([provider.CLIProvider]); run accepts only its models.
type CLIProvider = provider.CLIProvider

// ResultTotals is implemented by a [CLIProvider] whose result chunks'
// numbers add up over turns ([provider.ResultTotals]).
type ResultTotals = provider.ResultTotals

// Call is one model call ([provider.Call]).
type Call = provider.Call

// ToolSpec describes a function tool offered to a model natively (see
// [Call.Tools]; [wire.ToolSpec]).
type ToolSpec = wire.ToolSpec

// ToolCall is a tool call a model asked for natively ([provider.ToolCall]).
type ToolCall = provider.ToolCall

// Completion is a model's answer ([provider.Completion]).
type Completion = provider.Completion

// ProviderError is a classified model-provider failure
// ([provider.ProviderError]).
type ProviderError = provider.ProviderError

// ErrUnknownProvider is returned by [Providers.Lookup] for an unregistered
// name ([provider.ErrUnknownProvider]).
var ErrUnknownProvider = provider.ErrUnknownProvider

// Providers is a registry of model providers by name ([provider.Providers]).
type Providers = provider.Providers

// NewProviders returns a registry holding the given providers
// ([provider.NewProviders]).
func NewProviders(named map[string]Provider) *Providers { return provider.NewProviders(named) }
