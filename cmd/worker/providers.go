package main

import (
	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/provider/anthropic"
	"github.com/lionbus/lionbus/pkg/ops/provider/cli"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai"
	"github.com/lionbus/lionbus/pkg/ops/provider/scripted"
)

// newProviders returns the model providers the worker serves: "scripted"
// always, and "openai" when cfg configures it (--openai-base-url,
// --openai-api-key or their environment variables).
func newProviders(cfg config, log zerolog.Logger) (*ops.Providers, error) {
	providers := ops.NewProviders(nil)
	if err := scripted.Register(providers); err != nil {
		return nil, err
	}
	if cmds, err := cfg.cliCommands(); err != nil {
		return nil, err
	} else if len(cmds) > 0 {
		prov, err := cli.New(cmds...)
		if err != nil {
			return nil, err
		}
		prov.Logger = log.With().Str("component", "provider").Str("provider", cli.Name).Logger()
		if err := providers.Register(cli.Name, prov); err != nil {
			return nil, err
		}
		log.Info().Str("provider", cli.Name).Strs("clis", prov.Names()).Msg("model provider registered")
	}
	if cfg.AnthropicBaseURL != "" || cfg.AnthropicAPIKey != "" {
		prov, err := anthropic.New(anthropic.Config{BaseURL: cfg.AnthropicBaseURL, APIKey: cfg.AnthropicAPIKey})
		if err != nil {
			return nil, err
		}
		if err := providers.Register(anthropic.Name, prov); err != nil {
			return nil, err
		}
		log.Info().Str("provider", anthropic.Name).Str("detail", prov.String()).Bool("api_key", cfg.AnthropicAPIKey != "").
			Msg("model provider registered")
	}
	if !cfg.openAIEnabled() {
		return providers, nil
	}
	ocfg := cfg.openAIConfig()
	ocfg.Logger = log.With().Str("component", "provider").Str("provider", openai.Name).Logger()
	prov, err := openai.New(ocfg)
	if err != nil {
		return nil, err
	}
	if err := providers.Register(openai.Name, prov); err != nil {
		return nil, err
	}
	log.Info().Str("provider", openai.Name).Str("detail", prov.String()).Bool("api_key", ocfg.APIKey != "").
		Msg("model provider registered")
	return providers, nil
}
