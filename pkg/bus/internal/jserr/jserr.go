// Package jserr classifies JetStream API errors.
package jserr

import (
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// WrongLastSequence reports whether err is the server's refusal of a
// publish whose expected last (subject) sequence did not match.
func WrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}
