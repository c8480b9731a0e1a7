package login

// WithoutLock makes s refresh without the flock: the control that shows what the lock
// prevents. Tests only.
func (s *Source) WithoutLock() *Source { s.nolock = true; return s }
