package conn

// pin returns s as this package's session type (tests reach its internals).
func pin(s Session) *pinned { return s.(*pinned) }
