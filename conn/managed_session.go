package conn

// Dead reports, without blocking, whether the session is known unusable: it
// was retired (fenced, redirected, or found dead), or its socket is known
// closed. A socket is found closed at once when it runs in rueidis'
// background mode (see watchDeath), otherwise by the PING that precedes the
// next command after an idle period (see SetIdleCheck); that command is then
// refused as not submitted and the session retired.
func (s *pinned) Dead() bool {
	if s.Retired() {
		return true
	}
	if dead := s.dead.Load(); dead != nil {
		select {
		case <-*dead:
			s.pool.retire(s)
			return true
		default:
		}
	}
	return false
}
