package ops

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lionbus/lionbus/pkg/ops/internal/clirun"
	"github.com/lionbus/lionbus/pkg/ops/middle"
	"github.com/lionbus/lionbus/pkg/wire"
)

// runCollectMiddle is run_and_collect as a middle (ADR-0021 D3, D5): it
// clears when asked, runs the CLI model's stream (recorded as run records
// it, without run's lifecycle: the caller owns it), joins the
// non-empty assistant responses with a blank line, and answers null when
// none arrived, the joined text when validation is skipped or there is no
// response format, else the text parsed once.
type runCollectMiddle struct{ e *Engine }

// Exchange runs run_and_collect for in.
func (m runCollectMiddle) Exchange(ctx context.Context, in MiddleInput) (*MiddleResult, error) {
	req, d, err := middleExchange(in, MiddleRunAndCollect)
	if err != nil {
		return nil, err
	}
	// The directory is checked before anything is stored.
	var run RunInput
	if in.Run != nil {
		run = *in.Run
	}
	var dir *string
	if run.StreamPersistDir != "" {
		dir = &run.StreamPersistDir
	}
	logDir, err := clirun.LogDir("stream_persist_dir", run.StreamPersist, dir, m.e.runLogDefault)
	if err != nil {
		return nil, err
	}
	x, err := m.e.prepareData(ctx, req, d)
	if err != nil {
		return nil, asError(ctx, err)
	}
	x.streamID = in.StreamID
	prov, err := m.e.cliProvider(x.chat)
	if err != nil {
		return nil, err
	}
	var res *Result
	if seq, ok := x.branch.Commits.Seq(req.ID); ok {
		res, err = m.e.replayRunCommitted(ctx, req, x.branch, seq, replayMessages)
	} else {
		res, _, err = (&cliRun{e: m.e, req: req, x: x, prov: prov, logDir: logDir}).stream(ctx)
	}
	if err != nil {
		return nil, asError(ctx, err)
	}
	return m.collect(ctx, req, x, res)
}

// collect turns a run's result into run_and_collect's.
func (m runCollectMiddle) collect(ctx context.Context, req Request, x *exchange, res *Result) (*MiddleResult, error) {
	var rv RunValue
	if err := json.Unmarshal(res.Value, &rv); err != nil {
		return nil, Errorf(CodeInternal, "run_and_collect: the run's value is unreadable: %v", err)
	}
	out := &MiddleResult{Usage: res.Usage, Replayed: res.Replayed}
	var extra wire.RunExtra
	if err := res.DecodeExtra(&extra); err != nil {
		return nil, Errorf(CodeInternal, "run_and_collect: the run's result is unreadable: %v", err)
	}
	if extra.RunLog != nil {
		out.Run = &middle.RunReport{Log: extra.RunLog}
	}
	if rv.Text == nil {
		return out, nil
	}
	if x.data.SkipValidation || x.data.validator == nil {
		out.Value = *rv.Text
		return out, nil
	}
	b, err := m.e.load(ctx, x.branch.ID)
	if err != nil {
		return nil, err
	}
	usage := out.Usage
	v, _, err := m.e.parseText(ctx, parseInput{
		req: req, branch: b, history: b.Messages, text: *rv.Text, spec: x.data.parseSpec(),
		model: x.parse, calls: &x.calls, usage: &usage,
	})
	if err != nil {
		if fail, ok := err.(*parseFailure); ok {
			return nil, &Error{Code: CodeParse, Err: fail, Message: fmt.Sprintf(
				"the collected text could not be parsed into response_format: %s: %s", fail.Code, fail.Describe(x.data.retries))}
		}
		return nil, asError(ctx, err)
	}
	if out.Value, err = decoded(v); err != nil {
		return nil, err
	}
	out.Usage = usage
	return out, nil
}

// decoded returns v as encoding/json decodes its JSON, the form a
// [MiddleResult] holds: the parse stage and the LNDL assembler keep
// numbers as json.Number and objects in their own types.
func decoded(v any) (any, error) {
	raw, err := marshalValue(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, Errorf(CodeInternal, "decode value: %v", err)
	}
	return out, nil
}
