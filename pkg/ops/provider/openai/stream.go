package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lionbus/lionbus/pkg/ops"
)

// ErrStreamInterrupted means a streamed answer failed after chunks of it
// were emitted; it is not retried (the chunks cannot be taken back).
var ErrStreamInterrupted = errors.New("openai: stream interrupted")

var _ ops.StreamingProvider = (*Provider)(nil)

// Stream makes the call of Complete with "stream": true (and usage
// included) and emits the answer as it arrives, read from the server-sent
// events: each content delta as a text chunk (the first not marked
// IsDelta), then a tool_use chunk per tool call once the stream ended,
// then a result chunk with the usage. The completion is the one Complete
// would return for the same answer: the deltas are put back together into
// a Chat Completions response and decoded as one. Failures before the
// first chunk are retried as Complete's are; after it they are final
// (ErrStreamInterrupted), and so is an error emit returns.
func (p *Provider) Stream(ctx context.Context, call ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
	body, err := buildRequest(call, true)
	if err != nil {
		return nil, p.fail(err.Error(), false, err)
	}
	var emitErr error
	comp, err := p.call(ctx, call, body, func(ctx context.Context, body []byte) (*ops.Completion, time.Duration, error) {
		comp, retryAfter, err := p.sendStream(ctx, body, emit)
		var ee *emitError
		if errors.As(err, &ee) {
			emitErr = ee.err
		}
		return comp, retryAfter, err
	})
	if emitErr != nil {
		return nil, fmt.Errorf("openai: stream stopped by its consumer: %w", emitErr)
	}
	return comp, err
}

// emitError marks an error of the consumer's emit.
type emitError struct{ err error }

func (e *emitError) Error() string { return "openai: emit: " + e.err.Error() }

// streamChunk is one data object of the stream.
type streamChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage    `json:"usage"`
	Error *apiError `json:"error"`
}

// sendStream makes one streamed attempt.
func (p *Provider) sendStream(ctx context.Context, body []byte, emit func(ops.Chunk) error) (*ops.Completion, time.Duration, error) {
	resp, retryAfter, err := p.post(ctx, body, "text/event-stream")
	if err != nil {
		return nil, retryAfter, err
	}
	defer resp.Body.Close()

	var (
		id, model, finish string
		content, refusal  strings.Builder
		calls             = map[int]*toolCallAcc{}
		use               *usage
		emitted, read     int64
		gotContent        bool
	)
	fail := func(err error) (*ops.Completion, time.Duration, error) {
		if emitted > 0 {
			return nil, retryAfter, fmt.Errorf("%w after %d chunks: %v", ErrStreamInterrupted, emitted, err)
		}
		return nil, retryAfter, err
	}
	send := func(c ops.Chunk) error {
		if err := emit(c); err != nil {
			return &emitError{err}
		}
		emitted++
		return nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), int(min(p.maxBody, 16<<20)))
	done := false
	for !done && sc.Scan() {
		line := sc.Bytes()
		read += int64(len(line))
		if read > p.maxBody {
			return fail(fmt.Errorf("%w: the answer's body is larger than %d bytes", ErrResponseTooLarge, p.maxBody))
		}
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // event:, id:, comments and blank lines
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			done = true
			break
		}
		var ch streamChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return fail(fmt.Errorf("%w: stream event is not JSON: %v", ErrMalformedResponse, err))
		}
		if ch.Error != nil {
			msg := truncate(p.redact(ch.Error.Message), MaxErrorMessageLen)
			return fail(fmt.Errorf("%w: error in the stream: %s", ErrServer, msg))
		}
		if id == "" {
			id, model = ch.ID, ch.Model
		}
		if ch.Usage != nil {
			use = ch.Usage
		}
		for _, c := range ch.Choices {
			if c.Index != 0 {
				continue // only the first choice is read
			}
			if c.FinishReason != nil && *c.FinishReason != "" {
				finish = *c.FinishReason
			}
			if d := c.Delta.Content; d != nil && *d != "" {
				content.WriteString(*d)
				if err := send(ops.Chunk{Kind: ops.ChunkText, Content: *d, IsDelta: gotContent}); err != nil {
					return nil, retryAfter, err
				}
				gotContent = true
			}
			if d := c.Delta.Refusal; d != nil {
				refusal.WriteString(*d)
			}
			for _, tc := range c.Delta.ToolCalls {
				acc := calls[tc.Index]
				if acc == nil {
					acc = &toolCallAcc{}
					calls[tc.Index] = acc
				}
				if tc.ID != "" {
					acc.ID = tc.ID
				}
				if tc.Type != "" {
					acc.Type = tc.Type
				}
				if tc.Function.Name != "" {
					acc.Name = tc.Function.Name
				}
				acc.Args.WriteString(tc.Function.Arguments)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fail(fmt.Errorf("%w: reading the stream: %s", ErrConnection, p.redact(err.Error())))
	}
	if !done {
		return fail(fmt.Errorf("%w: the stream ended without [DONE]", ErrConnection))
	}
	full := p.assemble(id, model, finish, content.String(), gotContent, refusal.String(), calls, use)
	comp, err := decodeResponse(p.redactBytes(full), p.maxRaw)
	if err != nil {
		return fail(err)
	}
	for _, tc := range comp.ToolCalls {
		if err := send(ops.Chunk{Kind: ops.ChunkToolUse, ToolID: tc.ID, ToolName: tc.Name, ToolInput: tc.Arguments}); err != nil {
			return nil, retryAfter, err
		}
	}
	result := ops.Chunk{Kind: ops.ChunkResult, Metadata: map[string]any{"finish_reason": finish}}
	if use != nil {
		result.Metadata["usage"] = map[string]any{"input_tokens": use.PromptTokens, "output_tokens": use.CompletionTokens, "total_tokens": use.TotalTokens}
	}
	if err := send(result); err != nil {
		return nil, retryAfter, err
	}
	return comp, retryAfter, nil
}

// toolCallAcc accumulates the deltas of one streamed tool call.
type toolCallAcc struct {
	ID, Type, Name string
	Args           strings.Builder
}

// assemble puts a streamed answer back together as the Chat Completions
// response the same call answers without streaming.
func (p *Provider) assemble(id, model, finish, content string, hasContent bool, refusal string, calls map[int]*toolCallAcc, use *usage) []byte {
	msg := map[string]any{"role": "assistant", "content": nil}
	if hasContent {
		msg["content"] = content
	}
	if refusal != "" {
		msg["refusal"] = refusal
	}
	if len(calls) > 0 {
		idx := make([]int, 0, len(calls))
		for i := range calls {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		list := make([]any, 0, len(idx))
		for _, i := range idx {
			c := calls[i]
			typ := c.Type
			if typ == "" {
				typ = "function"
			}
			list = append(list, map[string]any{"id": c.ID, "type": typ, "function": map[string]any{"name": c.Name, "arguments": c.Args.String()}})
		}
		msg["tool_calls"] = list
	}
	r := map[string]any{
		"id": id, "object": "chat.completion", "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
	}
	if use != nil {
		r["usage"] = use
	}
	b, _ := json.Marshal(r)
	return b
}
