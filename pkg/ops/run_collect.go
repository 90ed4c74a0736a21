package ops

import (
	"context"
	"encoding/json"
	"fmt"
)

// runCollectMiddle is run_and_collect as a middle (ADR-0021 D3, D5): it
// clears when asked, runs the CLI model's stream (recorded as run records
// it, without run's lifecycle: the caller owns it), joins the
// non-empty assistant responses with a blank line, and answers null when
// none arrived, the joined text when validation is skipped or there is no
// response format, else the text parsed once.
type runCollectMiddle struct{ e *Engine }

// Exchange runs run_and_collect for in.
func (m runCollectMiddle) Exchange(ctx context.Context, in MiddleInput) (*Result, error) {
	req, d, err := in.exchange(MiddleRunAndCollect)
	if err != nil {
		return nil, err
	}
	// The directory is checked before anything is stored.
	var dir *string
	if in.StreamPersistDir != "" {
		dir = &in.StreamPersistDir
	}
	logDir, err := m.e.runLogDir("stream_persist_dir", in.StreamPersist, dir)
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

// collect turns a run's result into run_and_collect's value.
func (m runCollectMiddle) collect(ctx context.Context, req Request, x *exchange, res *Result) (*Result, error) {
	var rv RunValue
	if err := json.Unmarshal(res.Value, &rv); err != nil {
		return nil, Errorf(CodeInternal, "run_and_collect: the run's value is unreadable: %v", err)
	}
	out := *res
	if rv.Text == nil {
		out.Value = json.RawMessage("null")
		return &out, nil
	}
	if x.data.SkipValidation || x.data.validator == nil {
		v, err := marshalValue(*rv.Text)
		if err != nil {
			return nil, err
		}
		out.Value = v
		return &out, nil
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
				"the collected text could not be parsed into response_format: %s: %s", fail.code, fail.describe(x.data.retries))}
		}
		return nil, asError(ctx, err)
	}
	enc, err := marshalValue(v)
	if err != nil {
		return nil, err
	}
	out.Value, out.Usage = enc, usage
	return &out, nil
}
