package budget

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/history"
)

// Price is a model's price in US dollars per million tokens.
type Price struct {
	// Input is the price of a million input (prompt) tokens.
	Input float64 `json:"input_per_million"`
	// Output is the price of a million output (completion) tokens.
	Output float64 `json:"output_per_million"`
}

// Prices is a price table by model reference ("openai:gpt-4.1-mini"); the
// entry "provider:*" prices every model of a provider without its own.
type Prices map[string]Price

// Lookup returns the price of model: its own entry, else its provider's
// "provider:*" entry.
func (p Prices) Lookup(model history.ModelRef) (Price, bool) {
	if pr, ok := p[model.String()]; ok {
		return pr, true
	}
	pr, ok := p[model.Provider+":*"]
	return pr, ok
}

// Cost returns what usage cost on model, and false when the table has no
// price for it.
func (p Prices) Cost(model history.ModelRef, u ops.Usage) (float64, bool) {
	pr, ok := p.Lookup(model)
	if !ok {
		return 0, false
	}
	return pr.Cost(u), true
}

// Cost returns what usage cost at this price.
func (pr Price) Cost(u ops.Usage) float64 {
	return (float64(u.InputTokens)*pr.Input + float64(u.OutputTokens)*pr.Output) / 1e6
}

// Validate returns an error for a negative price.
func (p Prices) Validate() error {
	for k, pr := range p {
		if pr.Input < 0 || pr.Output < 0 {
			return fmt.Errorf("budget: price of %s is negative", k)
		}
	}
	return nil
}

// File is the JSON form of a budgets file (the worker's --budgets): limits
// and prices by model reference.
//
//	{"limits": {"openai:gpt-4.1-mini": {"requests": 500, "tokens": 200000, "in_flight": 20}},
//	 "prices": {"openai:gpt-4.1-mini": {"input_per_million": 0.4, "output_per_million": 1.6}}}
type File struct {
	Limits map[string]Limits `json:"limits,omitempty"`
	Prices Prices            `json:"prices,omitempty"`
}

// ReadFile reads and checks a budgets file.
func ReadFile(path string) (File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("budget: %w", err)
	}
	var f File
	if err := json.Unmarshal(raw, &f); err != nil {
		return File{}, fmt.Errorf("budget: %s: %w", path, err)
	}
	for k, l := range f.Limits {
		if err := l.Validate(); err != nil {
			return File{}, fmt.Errorf("budget: %s: %s: %w", path, k, err)
		}
	}
	if err := f.Prices.Validate(); err != nil {
		return File{}, fmt.Errorf("budget: %s: %w", path, err)
	}
	return f, nil
}
