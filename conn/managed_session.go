package conn

// Dead reports, without blocking, whether the session's socket is known
// broken (the server closed it, or it failed); the next command on it would
// be refused as not submitted. It may consume the socket's close error.
func (s *Session) Dead() bool {
	if s.Retired() {
		return true
	}
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}
