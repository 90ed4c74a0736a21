package openai

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// Name is the provider name the worker registers the provider under, and
// the default [Config.Name].
const Name = "openai"

// Environment variables read by [ConfigFromEnv]; the official OpenAI SDKs
// read the same.
const (
	// EnvBaseURL holds the API root (Config.BaseURL).
	EnvBaseURL = "OPENAI_BASE_URL"
	// EnvAPIKey holds the API key (Config.APIKey).
	EnvAPIKey = "OPENAI_API_KEY"
)

// Defaults and limits of a [Config].
const (
	// DefaultBaseURL is the OpenAI API.
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultTimeout bounds one call to Complete, every attempt and every
	// wait between attempts included.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxRetries is how many times a failed attempt is retried: at
	// most DefaultMaxRetries+1 attempts per call.
	DefaultMaxRetries = 2
	// MaxRetriesLimit bounds Config.MaxRetries.
	MaxRetriesLimit = 10
	// DefaultRetryBackoff is the wait before the first retry; it doubles
	// with each further retry, and each wait is drawn at random between
	// half of it and all of it.
	DefaultRetryBackoff = 500 * time.Millisecond
	// DefaultMaxRetryWait is the longest wait between two attempts.
	DefaultMaxRetryWait = 30 * time.Second
	// DefaultMaxResponseBytes bounds the body of a successful answer.
	DefaultMaxResponseBytes = 10 << 20
	// DefaultMaxRawBytes bounds Completion.Raw, the raw answer kept in the
	// branch's history.
	DefaultMaxRawBytes = 64 << 10
	// maxErrorBodyBytes bounds what is read of an error answer's body.
	maxErrorBodyBytes = 64 << 10
)

// Config configures a [Provider]. Every field is optional, except APIKey
// for the OpenAI API itself (the zero value, which [New] refuses);
// [ConfigFromEnv] reads the usual environment variables.
type Config struct {
	// Name is the provider name in errors and logs; default [Name]. Set it
	// when the provider is registered under another name, for another
	// OpenAI-compatible server.
	Name string
	// BaseURL is the API root; requests go to BaseURL + "/chat/completions".
	// Default [DefaultBaseURL]. Any OpenAI-compatible server works (vLLM,
	// Ollama at http://localhost:11434/v1, LM Studio, gateways).
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <APIKey>"; empty sends no
	// Authorization header, which local servers accept. Required with the
	// default BaseURL. It never appears in an error, a log line or
	// [Config.String].
	APIKey string
	// HTTPClient sends the requests; nil means a client of its own with
	// http.DefaultTransport. Its own Timeout, if any, applies per attempt.
	HTTPClient *http.Client
	// Timeout bounds one call to Complete, every attempt and wait
	// included, on top of the caller's context; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how many times an attempt that failed on a 429, a 5xx
	// or a lost connection is retried; 0 means DefaultMaxRetries, a
	// negative value none. At most MaxRetriesLimit.
	MaxRetries int
	// RetryBackoff is the wait before the first retry, doubled for each
	// further retry and drawn at random between half of it and all of it;
	// 0 means DefaultRetryBackoff. A Retry-After (or retry-after-ms)
	// header replaces it.
	RetryBackoff time.Duration
	// MaxRetryWait caps each wait between attempts; 0 means
	// DefaultMaxRetryWait. An answer whose Retry-After asks for longer
	// ends the retries at once, with a temporary error.
	MaxRetryWait time.Duration
	// MaxResponseBytes bounds the body of a successful answer; a larger one
	// fails with ErrResponseTooLarge. 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// MaxRawBytes bounds Completion.Raw. A larger answer is kept as a
	// summary {id, object, model, choices: [{index, finish_reason}], usage,
	// truncated: true, bytes}. 0 means DefaultMaxRawBytes, a negative
	// value keeps no raw answer.
	MaxRawBytes int
	// Logger receives a line for each retry. The zero value discards
	// them.
	Logger zerolog.Logger
}

// ConfigFromEnv returns a Config with BaseURL from OPENAI_BASE_URL and
// APIKey from OPENAI_API_KEY (each empty when unset); every other field
// is left to its default.
func ConfigFromEnv() Config {
	return Config{BaseURL: os.Getenv(EnvBaseURL), APIKey: os.Getenv(EnvAPIKey)}
}

// String describes c without its API key, which it shows as "[set]" or
// "[unset]", so that printing a Config with %v or %+v is safe.
func (c Config) String() string {
	key := "[unset]"
	if c.APIKey != "" {
		key = "[set]"
	}
	return fmt.Sprintf("openai.Config{Name:%q BaseURL:%q APIKey:%s Timeout:%s MaxRetries:%d RetryBackoff:%s MaxRetryWait:%s MaxResponseBytes:%d MaxRawBytes:%d}",
		c.Name, redactURL(c.BaseURL), key, c.Timeout, c.MaxRetries, c.RetryBackoff, c.MaxRetryWait, c.MaxResponseBytes, c.MaxRawBytes)
}

// redactURL returns s with any password in it masked ("xxxxx").
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(invalid URL)"
	}
	return u.Redacted()
}

// GoString is String, so that %#v does not print the API key either.
func (c Config) GoString() string { return c.String() }
