package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/internal/connloss"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
	"github.com/lionbus/lionbus/pkg/ops"
)

// ResumeHeader is the header of a request published again to resume it
// once the approval it was parked for was decided; its value is the
// approval id (ops.Request.Resume).
const ResumeHeader = protocol.ResumeHeader

// ParkedRequest is a request the handler parked (ops.ErrParked), as it
// was delivered: what Config.OnParked keeps, to publish it again with
// ResumeHeader when the wait is over.
type ParkedRequest struct {
	// Subject, Header and Data are the request message's.
	Subject string
	Header  nats.Header
	Data    []byte
	// ID is the request id.
	ID string
	// Parked says what the request waits for.
	Parked *ops.ParkedError
}

// park settles a delivery whose handler parked it: the request is handed
// to Config.OnParked, which keeps it, then acknowledged without an
// answer, so that it holds no slot, no branch and no lease while it
// waits. When OnParked fails, the request is handed back and its
// redelivery parks it again; without OnParked it is answered with the
// error.
func (w *Worker) park(d *delivery) (settled bool) {
	var pe *ops.ParkedError
	if !errors.As(d.err, &pe) {
		return false
	}
	if w.cfg.OnParked == nil {
		d.err = &ops.Error{Code: ops.CodeInternal, Message: fmt.Sprintf("request %s was parked (%v) but this worker keeps no parked requests", d.req.ID(), pe), Err: d.err}
		return false
	}
	eventsStored := w.awaitEvents(d)
	ctx, cancel := connloss.Bound(context.Background(), w.nc, publishTimeout)
	defer cancel()
	pr := ParkedRequest{Subject: d.msg.Subject(), Header: d.msg.Headers(), Data: d.msg.Data(), ID: d.req.ID(), Parked: pe}
	if err := w.cfg.OnParked(ctx, pr); err != nil {
		delay := w.cfg.Backoff.Delay(d.attempt)
		w.health.warn(d.log).Err(err).Dur("retry_in", delay).Msg("parked request not kept; it will be redelivered")
		_ = d.msg.NakWithDelay(delay)
		return true
	}
	eventsStored()
	d.log.Info().Str("approval", pe.ApprovalID).Str("tool", pe.Tool).Msg("request parked until its approval is decided")
	w.ack(d.msg, d.log)
	return true
}
