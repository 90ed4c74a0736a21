package protocol

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Headers of a dead letter, the copy of a request kept in the dead-letter
// stream (subject Subjects.DeadLetter). The body and every other header are
// the request message's own, so the request can be read, or published
// again, as it was sent.
const (
	// HeaderDeadReason is the error code the request ended with, e.g.
	// "unavailable" or "malformed_event".
	HeaderDeadReason = "Lion-Dead-Reason"
	// HeaderDeadError is the error message (at most MaxDeadErrorLength
	// bytes).
	HeaderDeadError = "Lion-Dead-Error"
	// HeaderDeadSubject is the subject the request was published to.
	HeaderDeadSubject = "Lion-Dead-Subject"
	// HeaderDeadRequest is the request id, when it could be read.
	HeaderDeadRequest = "Lion-Dead-Request"
	// HeaderDeadAttempts is how many times the request was delivered.
	HeaderDeadAttempts = "Lion-Dead-Attempts"
	// HeaderDeadSeq is the request's sequence in the ops stream.
	HeaderDeadSeq = "Lion-Dead-Seq"
	// HeaderDeadTime is when the request was dead-lettered (RFC 3339).
	HeaderDeadTime = "Lion-Dead-Time"
	// HeaderDeadAnswered is "true" when the request's client was sent an
	// error answer, "false" when it had no usable reply address.
	HeaderDeadAnswered = "Lion-Dead-Answered"
)

// MaxDeadErrorLength bounds the error message kept in a dead letter.
const MaxDeadErrorLength = 1024

// DeadLetter is what the dead-letter stream records about a request: why it
// ended there, and the request message as it was published.
type DeadLetter struct {
	// Key is the last token of the dead letter's subject: the request id,
	// or "seq-N" for a request whose id could not be read.
	Key string
	// RequestID is the request id, empty when it could not be read.
	RequestID string
	// Reason is the error code the request ended with.
	Reason wire.Code
	// Error is the error message.
	Error string
	// Subject is the subject the request was published to.
	Subject string
	// Attempts is how many times the request was delivered.
	Attempts int
	// OpsSeq is the request's sequence in the ops stream.
	OpsSeq uint64
	// Time is when the request was dead-lettered.
	Time time.Time
	// Answered reports whether the client was sent an error answer.
	Answered bool
	// Header and Data are the request message's headers (lionbus's own
	// dead-letter headers removed) and body.
	Header nats.Header
	Data   []byte
	// Seq is the dead letter's sequence in the dead-letter stream.
	Seq uint64
}

// DeadLetterKey returns the key a request is dead-lettered under: its id
// when that is a valid token, else "seq-<opsSeq>".
func DeadLetterKey(requestID string, opsSeq uint64) string {
	if ValidToken(requestID) {
		return requestID
	}
	return "seq-" + strconv.FormatUint(opsSeq, 10)
}

// stripped are the headers of a request message not copied into its dead
// letter: the server's delivery metadata and the publish-time checks, which
// describe the original publish and would refuse a republish.
var stripped = append([]string{
	jetstream.MsgIDHeader,
	jetstream.ExpectedStreamHeader,
	jetstream.ExpectedLastSeqHeader,
	jetstream.ExpectedLastSubjSeqHeader,
	jetstream.ExpectedLastSubjSeqSubjHeader,
	jetstream.ExpectedLastMsgIDHeader,
}, storedMetadata...)

// storedMetadata are the headers a direct get adds to a stored message:
// they describe the stored copy, not the message.
var storedMetadata = []string{
	jetstream.StreamHeader,
	jetstream.SequenceHeader,
	jetstream.TimeStampHeaer,
	jetstream.SubjectHeader,
	jetstream.LastSequenceHeader,
	"Nats-Num-Pending",
}

// DeleteStoredMetadata removes from h the headers a direct get of a stored
// message adds (stream, sequence, time, subject, ...), so that the message
// can be sent on as it was published.
func DeleteStoredMetadata(h nats.Header) {
	for _, k := range storedMetadata {
		h.Del(k)
	}
}

// Message returns the dead letter as a message on subject (see
// Subjects.DeadLetter), with the Nats-Msg-Id "dead-<key>" so that two
// workers recording the same request store it once.
func (d *DeadLetter) Message(subject string) *nats.Msg {
	m := nats.NewMsg(subject)
	for k, v := range d.Header {
		if strings.HasPrefix(k, "Lion-Dead-") {
			continue
		}
		m.Header[k] = append([]string(nil), v...)
	}
	for _, k := range stripped {
		m.Header.Del(k)
	}
	msg := d.Error
	if len(msg) > MaxDeadErrorLength {
		msg = msg[:MaxDeadErrorLength]
	}
	// Header values must stay on one line.
	msg = strings.NewReplacer("\r", " ", "\n", " ").Replace(msg)
	set := func(k, v string) {
		if v != "" {
			m.Header.Set(k, v)
		}
	}
	set(HeaderDeadReason, string(d.Reason))
	set(HeaderDeadError, msg)
	set(HeaderDeadSubject, d.Subject)
	set(HeaderDeadRequest, d.RequestID)
	set(HeaderDeadAttempts, strconv.Itoa(d.Attempts))
	set(HeaderDeadSeq, strconv.FormatUint(d.OpsSeq, 10))
	set(HeaderDeadTime, d.Time.UTC().Format(time.RFC3339Nano))
	set(HeaderDeadAnswered, strconv.FormatBool(d.Answered))
	m.Header.Set(jetstream.MsgIDHeader, "dead-"+d.Key)
	m.Data = d.Data
	return m
}

// DecodeDeadLetter reads a dead letter stored on subject at stream sequence
// seq. It fails only when the subject is not a dead-letter subject of subj;
// missing or unreadable headers leave their fields zero.
func DecodeDeadLetter(subj Subjects, subject string, seq uint64, h nats.Header, data []byte) (*DeadLetter, error) {
	prefix := subj.Prefix + ".dlq."
	key, ok := strings.CutPrefix(subject, prefix)
	if !ok || key == "" {
		return nil, fmt.Errorf("protocol: %q is not a dead-letter subject", subject)
	}
	d := &DeadLetter{
		Key:       key,
		RequestID: h.Get(HeaderDeadRequest),
		Reason:    wire.Code(h.Get(HeaderDeadReason)),
		Error:     h.Get(HeaderDeadError),
		Subject:   h.Get(HeaderDeadSubject),
		Answered:  h.Get(HeaderDeadAnswered) == "true",
		Header:    nats.Header{},
		Data:      data,
		Seq:       seq,
	}
	d.Attempts, _ = strconv.Atoi(h.Get(HeaderDeadAttempts))
	d.OpsSeq, _ = strconv.ParseUint(h.Get(HeaderDeadSeq), 10, 64)
	d.Time, _ = time.Parse(time.RFC3339Nano, h.Get(HeaderDeadTime))
	for k, v := range h {
		if strings.HasPrefix(k, "Lion-Dead-") || k == jetstream.MsgIDHeader {
			continue
		}
		d.Header[k] = v
	}
	for _, k := range stripped {
		d.Header.Del(k)
	}
	return d, nil
}
