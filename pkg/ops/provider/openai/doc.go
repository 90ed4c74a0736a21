// Package openai is a model provider for the OpenAI Chat Completions API
// and the many servers that speak it (vLLM, Ollama, LM Studio, gateways).
//
// [Provider.Complete] posts one non-streaming request to
// {BaseURL}/chat/completions with "Authorization: Bearer <APIKey>" and
// reads the first choice of the answer.
//
// # Request
//
// The body holds:
//
//   - "model": the model part of the reference ("openai:gpt-4.1-mini"
//     sends "gpt-4.1-mini");
//   - "messages": ops.Call.Messages, as system, user and assistant
//     messages with string content;
//   - "tools": ops.Call.Tools, as function tools, when the call has any;
//   - "response_format": {"type": "json_schema", "json_schema": {"name",
//     "schema", "strict"}} with ops.Call.ResponseFormat as the schema,
//     when the call has one;
//   - every option of the model reference, as it is: an object reference
//     {"provider": "openai", "model": "gpt-4.1-mini", "temperature": 0.2,
//     "max_completion_tokens": 512, "seed": 7, "stop": ["\n\n"]} sends
//     those four fields too.
//
// The well-known options are checked before anything is sent (numbers for
// temperature, top_p and the penalties; integers for max_tokens,
// max_completion_tokens, seed and top_logprobs; a string or a list of
// strings for stop; "n" must be 1). "model", "messages" and
// "stream_options" cannot be given, nor "stream": true. Two options are
// read by the provider and not sent: [OptionSchemaName] names the
// response_format schema (default [DefaultSchemaName]) and
// [OptionStrict] asks for strict schemas.
//
// # Answer
//
// The first choice's message.content (a string, or null) becomes
// Completion.Text; a refusal with no content becomes the text. Its
// tool_calls become Completion.ToolCalls, each function's arguments (a
// JSON object encoded as a string) decoded; arguments that are not such an
// object fail with [ErrToolArguments]. usage becomes Completion.Usage
// (prompt_tokens as input, completion_tokens as output). The answer itself
// is kept in Completion.Raw, at most [Config.MaxRawBytes] of it.
//
// # Failures and retries
//
// An attempt that fails on HTTP 429, a 5xx or a lost connection is retried
// ([Config.MaxRetries], default [DefaultMaxRetries]): after the wait the
// answer's Retry-After (seconds or an HTTP date) or retry-after-ms header
// asks for, else after an exponential backoff with jitter
// ([Config.RetryBackoff], doubling, each wait at most
// [Config.MaxRetryWait]). A Retry-After longer than MaxRetryWait, or a
// wait that would pass the call's deadline, ends the retries at once. The
// last failure of a retryable kind is a temporary *ops.ProviderError, so
// the worker retries the request later; any other 4xx is final, its
// message quoting the status and the provider's error.message (at most
// [MaxErrorMessageLen] bytes). The whole call is bounded by
// [Config.Timeout] (default [DefaultTimeout]) on top of the caller's
// context; running out of it is a temporary [ErrTimeout].
//
// A successful answer's body is read up to [Config.MaxResponseBytes]
// (default [DefaultMaxResponseBytes]); a larger one fails with
// [ErrResponseTooLarge], a body that is not a JSON object with
// [ErrMalformedResponse] and one without choices with [ErrNoChoices].
//
// The API key is sent in the Authorization header only. It is replaced by
// "[redacted]" wherever an answer quotes it, and appears in no error, log
// line or printed [Config].
package openai
