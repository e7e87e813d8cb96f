package conn

// Dead reports, without blocking, whether the session is known unusable: it
// was retired (fenced, redirected, or found dead). A socket the server closed
// while the session was idle is found dead by the PING that precedes the
// next command (see SetIdleCheck); that command is then refused as not
// submitted and the session retired.
func (s *Session) Dead() bool { return s.Retired() }
