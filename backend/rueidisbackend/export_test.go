package rueidisbackend

// SetRenewHook makes s run hook between the two steps of RenewSession (see
// renew.go); an error it returns fails the second step, as a crash or a
// lost connection would.
func SetRenewHook(s *Store, hook func() error) { s.d.renewHook = hook }
