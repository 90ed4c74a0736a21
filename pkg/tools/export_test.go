package tools

// Stopping reports whether Stop was called on s.
func (s *Service) Stopping() bool { return s.stopped.Load() }
