package console

// Option configures a console made by New.
type Option func(*Server)

// WithApprover has the approvals page answer as the NATS user user: the
// last token of an answer's subject, which the server's permissions must
// let the console's connection publish (docs/approvals.md). Without it
// the page lists approvals but offers no approve or deny.
func WithApprover(user string) Option {
	return func(s *Server) { s.approver = user }
}
