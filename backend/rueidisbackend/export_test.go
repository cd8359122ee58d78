package rueidisbackend

// SetRenewHook makes s run hook between the two steps of RenewSession (see
// renew.go); an error it returns fails the second step, as a crash or a
// lost connection would.
func SetRenewHook(s *Store, hook func() error) { s.d.renewHook = hook }

// SetBatchHook makes s run hook before it sends a batch of group-committed
// calls (see batch.go), with the batch's number of calls. It must be set
// before s is used.
func SetBatchHook(s *Store, hook func(calls int)) { s.d.batchHook = hook }

// MaxInFlight is how many batches of one script are on their way at once.
const MaxInFlight = maxInFlight

// Queued returns how many group-committed calls of s wait to be sent.
func Queued(s *Store) int {
	n := 0
	for _, b := range []*batcher{s.d.batches.refresh, s.d.batches.update, s.d.batches.cart} {
		if b != nil {
			b.mu.Lock()
			n += len(b.queue)
			b.mu.Unlock()
		}
	}
	return n
}
