package scripted

import (
	"context"
	"fmt"
	"maps"
	"unicode"

	"github.com/lionbus/lionbus/pkg/ops"
)

var _ ops.StreamingProvider = Provider{}

// Stream answers call as Complete does and emits the answer as chunks: the
// reply text cut after each run of whitespace (one word per chunk, every
// chunk after the first marked IsDelta), then a tool_use chunk per scripted
// tool call, then a result chunk whose metadata holds the usage, if any. A
// scripted error is returned before any chunk is emitted. The text chunks
// concatenate to the completion's text.
func (p Provider) Stream(ctx context.Context, call ops.Call, emit func(ops.Chunk) error) (*ops.Completion, error) {
	comp, err := p.Complete(ctx, call)
	if err != nil {
		return nil, err
	}
	send := func(c ops.Chunk) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(c); err != nil {
			return fmt.Errorf("scripted: stream stopped by its consumer: %w", err)
		}
		return nil
	}
	for i, piece := range words(comp.Text) {
		if err := send(ops.Chunk{Kind: ops.ChunkText, Content: piece, IsDelta: i > 0}); err != nil {
			return nil, err
		}
	}
	for _, tc := range comp.ToolCalls {
		if err := send(ops.Chunk{Kind: ops.ChunkToolUse, ToolID: tc.ID, ToolName: tc.Name, ToolInput: maps.Clone(tc.Arguments)}); err != nil {
			return nil, err
		}
	}
	result := ops.Chunk{Kind: ops.ChunkResult}
	if u := comp.Usage; u != nil {
		result.Metadata = map[string]any{"usage": map[string]any{
			"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "total_tokens": u.TotalTokens,
		}}
	}
	if err := send(result); err != nil {
		return nil, err
	}
	return comp, nil
}

// words cuts s after each run of whitespace that follows other text, so the
// pieces concatenate to s; leading whitespace stays with the first word.
func words(s string) []string {
	var out []string
	start, seenText, prevSpace := 0, false, false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if !space && prevSpace && seenText {
			out = append(out, s[start:i])
			start = i
		}
		seenText = seenText || !space
		prevSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
