package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/lionbus/lionbus/pkg/ops"
	"github.com/lionbus/lionbus/pkg/ops/budget"
)

// Provider calls an OpenAI-compatible Chat Completions API. It is safe for
// concurrent use; build it with [New].
type Provider struct {
	name     string
	endpoint string
	base     string // BaseURL without user info, for logs
	key      string
	client   *http.Client

	timeout time.Duration
	retries int
	backoff time.Duration
	maxWait time.Duration
	maxBody int64
	maxRaw  int
	log     zerolog.Logger
	randN   func(n int64) int64 // random in [0, n), for jitter
}

var _ ops.Provider = (*Provider)(nil)

// New returns a provider for cfg. A Config it cannot use is an error
// wrapping ErrConfig: a BaseURL that is not an absolute http(s) URL, no
// APIKey with the default BaseURL, an APIKey that cannot be sent in a
// header, or a negative or out-of-range limit.
func New(cfg Config) (*Provider, error) {
	p := &Provider{
		name:    cfg.Name,
		key:     cfg.APIKey,
		client:  cfg.HTTPClient,
		timeout: cfg.Timeout,
		retries: cfg.MaxRetries,
		backoff: cfg.RetryBackoff,
		maxWait: cfg.MaxRetryWait,
		maxBody: cfg.MaxResponseBytes,
		maxRaw:  cfg.MaxRawBytes,
		log:     cfg.Logger,
		randN:   rand.Int64N,
	}
	if p.name == "" {
		p.name = Name
	}
	if p.client == nil {
		p.client = &http.Client{Transport: http.DefaultTransport}
	}
	var errs []error
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
		if cfg.APIKey == "" {
			errs = append(errs, fmt.Errorf("%w: an API key is needed for %s (set APIKey or %s)", ErrConfig, DefaultBaseURL, EnvAPIKey))
		}
	}
	u, err := url.Parse(base)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("%w: base URL: %v", ErrConfig, err))
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, fmt.Errorf("%w: base URL %q is not an absolute http or https URL", ErrConfig, u.Redacted()))
	default:
		p.endpoint = u.JoinPath("chat/completions").String()
		p.base = u.Redacted()
	}
	if strings.ContainsFunc(cfg.APIKey, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		errs = append(errs, fmt.Errorf("%w: the API key holds spaces or control characters", ErrConfig))
	}
	if p.timeout == 0 {
		p.timeout = DefaultTimeout
	}
	if p.backoff == 0 {
		p.backoff = DefaultRetryBackoff
	}
	if p.maxWait == 0 {
		p.maxWait = DefaultMaxRetryWait
	}
	if p.maxBody == 0 {
		p.maxBody = DefaultMaxResponseBytes
	}
	switch {
	case p.retries == 0:
		p.retries = DefaultMaxRetries
	case p.retries < 0:
		p.retries = 0
	case p.retries > MaxRetriesLimit:
		errs = append(errs, fmt.Errorf("%w: MaxRetries %d is more than %d", ErrConfig, p.retries, MaxRetriesLimit))
	}
	switch {
	case p.maxRaw == 0:
		p.maxRaw = DefaultMaxRawBytes
	case p.maxRaw < 0:
		p.maxRaw = 0
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Timeout", p.timeout}, {"RetryBackoff", p.backoff}, {"MaxRetryWait", p.maxWait}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%w: %s %s is negative", ErrConfig, d.name, d.v))
		}
	}
	if p.maxBody < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxResponseBytes %d is negative", ErrConfig, p.maxBody))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// String names the provider and its base URL, never its API key.
func (p *Provider) String() string {
	return fmt.Sprintf("openai provider %q at %s", p.name, p.base)
}

// Complete sends call to the Chat Completions endpoint and returns the
// first choice's answer.
//
// An attempt that fails on HTTP 429, a 5xx or a lost connection is retried
// up to Config.MaxRetries times, after the wait the answer's Retry-After
// asks for, else after an exponential backoff with jitter. The call as a
// whole ends after Config.Timeout.
//
// Every failure is an *ops.ProviderError wrapping one of the package's
// sentinel errors (an HTTP error answer as a *StatusError too): temporary
// for ErrRateLimited, ErrServer, ErrConnection (once the retries are spent)
// and ErrTimeout, final for the others. When ctx itself ends, the error
// wraps ctx.Err() instead.
func (p *Provider) Complete(ctx context.Context, call ops.Call) (*ops.Completion, error) {
	body, err := buildRequest(call, false)
	if err != nil {
		return nil, p.fail(err.Error(), false, err)
	}
	return p.call(ctx, call, body, p.send)
}

// call makes the attempts of a model call with send, retrying as Complete
// describes.
func (p *Provider) call(ctx context.Context, call ops.Call, body []byte,
	send func(context.Context, []byte) (*ops.Completion, time.Duration, error)) (*ops.Completion, error) {
	callCtx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()

	var last error
	for attempt := 1; ; attempt++ {
		comp, retryAfter, err := send(callCtx, body)
		if err == nil {
			return comp, nil
		}
		if cerr := p.ended(ctx, callCtx, last); cerr != nil {
			return nil, cerr
		}
		last = err
		if !retryable(err) {
			return nil, p.fail(err.Error(), false, err)
		}
		if attempt > p.retries {
			return nil, p.fail(fmt.Sprintf("%v; gave up after %s", err, attempts(attempt)), true, err)
		}
		if errors.Is(err, ErrRateLimited) && budget.Metered(ctx) {
			// The budget around the call retries it once it has budget.
			return nil, p.fail(err.Error(), true, err)
		}
		wait := retryAfter
		if wait < 0 {
			wait = backoff(p.backoff, p.maxWait, attempt, p.randN)
		} else if wait > p.maxWait {
			return nil, p.fail(fmt.Sprintf("%v; the server asks to retry after %s, longer than the %s allowed; gave up after %s",
				err, wait, p.maxWait, attempts(attempt)), true, err)
		}
		if deadline, ok := callCtx.Deadline(); ok && time.Until(deadline) < wait {
			return nil, p.fail(fmt.Sprintf("%v; a retry after %s would pass the call's deadline; gave up after %s",
				err, wait.Round(time.Millisecond), attempts(attempt)), true, err)
		}
		p.log.Info().Str("provider", p.name).Str("model", call.Model.String()).Int("attempt", attempt).
			Dur("wait", wait).Str("error", p.redact(err.Error())).Msg("model call failed; retrying")
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-callCtx.Done():
			t.Stop()
			return nil, p.ended(ctx, callCtx, last)
		}
	}
}

// ended returns nil while callCtx is live. Once it is done, it returns the
// error of the call: the caller's context error when ctx ended, else a
// temporary ErrTimeout provider error naming the last failure, if any.
func (p *Provider) ended(ctx, callCtx context.Context, last error) error {
	if callCtx.Err() == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: model call abandoned: %w", p.name, err)
	}
	// Only Config.Timeout ends callCtx but not ctx.
	msg := fmt.Sprintf("call timed out after %s", p.timeout)
	if last != nil {
		msg += "; the previous attempt failed: " + strings.TrimPrefix(last.Error(), "openai: ")
	}
	return p.fail(msg, true, fmt.Errorf("%w: %w", ErrTimeout, context.DeadlineExceeded))
}

// fail returns the provider error for msg, with the API key taken out
// (and the "openai: " of the package's errors, since the provider error
// names the provider).
func (p *Provider) fail(msg string, temporary bool, err error) *ops.ProviderError {
	msg = strings.TrimPrefix(msg, "openai: ")
	return &ops.ProviderError{Provider: p.name, Message: p.redact(msg), Temporary: temporary, Err: err}
}

// attempts says "1 attempt" or "n attempts".
func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// redact replaces every occurrence of the API key in s.
func (p *Provider) redact(s string) string {
	if p.key == "" {
		return s
	}
	return strings.ReplaceAll(s, p.key, "[redacted]")
}

// retryable reports whether a failed attempt may be retried.
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Temporary()
	}
	return errors.Is(err, ErrConnection)
}

// post sends body to the endpoint, asking for accept, and returns the
// response when its status is 2xx (the caller closes its body). Otherwise
// it returns the error, with the wait the answer asked for (Retry-After),
// or -1 when it asked for none.
func (p *Provider) post(ctx context.Context, body []byte, accept string) (*http.Response, time.Duration, error) {
	retryAfter := time.Duration(-1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, retryAfter, fmt.Errorf("%w: %v", ErrInvalidCall, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "lionbus")
	if p.key != "" {
		req.Header.Set("Authorization", "Bearer "+p.key)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, retryAfter, fmt.Errorf("%w: %s", ErrConnection, p.redact(err.Error()))
	}
	budget.ObserveResponse(ctx, resp.StatusCode, resp.Header)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
		se := decodeError(resp.StatusCode, p.redactBytes(raw))
		if d, ok := parseRetryAfter(resp.Header, time.Now()); ok {
			se.RetryAfter = d
			retryAfter = d
		}
		return nil, retryAfter, se
	}
	return resp, retryAfter, nil
}

// send makes one attempt. retryAfter is the wait an error answer asked
// for, or -1 when it asked for none.
func (p *Provider) send(ctx context.Context, body []byte) (comp *ops.Completion, retryAfter time.Duration, err error) {
	resp, retryAfter, err := p.post(ctx, body, "application/json")
	if err != nil {
		return nil, retryAfter, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, p.maxBody+1))
	if err != nil {
		return nil, retryAfter, fmt.Errorf("%w: reading the answer: %s", ErrConnection, p.redact(err.Error()))
	}
	if int64(len(raw)) > p.maxBody {
		return nil, retryAfter, fmt.Errorf("%w: the answer's body is larger than %d bytes", ErrResponseTooLarge, p.maxBody)
	}
	comp, err = decodeResponse(p.redactBytes(raw), p.maxRaw)
	return comp, retryAfter, err
}

// redactBytes replaces every occurrence of the API key in b.
func (p *Provider) redactBytes(b []byte) []byte {
	if p.key == "" {
		return b
	}
	return bytes.ReplaceAll(b, []byte(p.key), []byte("[redacted]"))
}
