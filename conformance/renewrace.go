package conformance

import (
	"sync"
	"sync/atomic"
)

// testRenewNeverLosesBothTokens moves one session down a chain of tokens,
// tokens[0] -> tokens[1] -> ..., while pollers look for it.
//
// A poller reads the index i of a token whose session was created before
// the poller read i (the renewer publishes i once RenewSession into
// tokens[i] has returned) and checks tokens[i], tokens[i+1], ... in that
// order, each CheckToken after the one before returned, until one is live.
// A store that creates the new session before it deletes the old one always
// lets this scan succeed: if tokens[j] misses, its session was deleted,
// which happened after tokens[j+1]'s session was created, so by the time
// the scan checks tokens[j+1] that session exists, and it is live unless it
// has been deleted in turn, and so on; the last token's session is never
// deleted. A store that deletes first and creates second leaves a moment
// when neither token is live; a scan that checks tokens[j+1] in that moment
// misses it and every later one, which do not exist yet.
//
// The pollers scan as fast as they can while a renewal starts, where a
// store that deletes first has its gap, and then wait for the next one:
// pollers that spun all the time would starve the renewer of the CPU (a
// store with a client-side cache answers them without a round trip).
func testRenewNeverLosesBoth(h *harness) {
	const renewals, pollers, scansPerRenewal = 2000, 4, 8
	tokens := seq("renew", renewals+1)
	h.start(tokens[0], "alice")
	h.addToCart(tokens[0], "item-a", 3)

	// step is the published index and a channel closed when the next one
	// is published.
	type step struct {
		i    int
		next chan struct{}
	}
	var (
		current atomic.Pointer[step]
		done    = make(chan struct{})
		scans   atomic.Int64
		wg      sync.WaitGroup
	)
	current.Store(&step{0, make(chan struct{})})
	// scan reports whether it found one of tokens[i:] live; it fails the
	// test if it did not.
	scan := func(i int) bool {
		for j := i; j < len(tokens); j++ {
			user, ok, err := h.s.CheckToken(h.ctx, tokens[j])
			if err != nil {
				h.t.Errorf("CheckToken(%q) during renewals = %v, want nil error", tokens[j], err)
				return false
			}
			if ok && user != "alice" {
				h.t.Errorf("CheckToken(%q) during renewals = %q, true, want \"alice\"", tokens[j], user)
				return false
			}
			if ok {
				scans.Add(1)
				return true
			}
		}
		h.t.Errorf("during RenewSession: CheckToken missed %q and every later token of the chain: "+
			"at some moment neither the old token nor the new one was live", tokens[i])
		return false
	}
	for range pollers {
		wg.Go(func() {
			for {
				st := current.Load()
				for range scansPerRenewal {
					if !scan(st.i) {
						return
					}
				}
				select {
				case <-st.next:
				case <-done:
					return
				}
			}
		})
	}
	for i := range renewals {
		ok, err := h.s.RenewSession(h.ctx, tokens[i], tokens[i+1], "")
		if err != nil || !ok {
			h.t.Errorf("RenewSession(%q, %q, \"\") = %v, %v, want true, nil", tokens[i], tokens[i+1], ok, err)
			break
		}
		if _, ok, err := h.s.CheckToken(h.ctx, tokens[i]); ok || err != nil {
			h.t.Errorf("CheckToken(%q) after RenewSession moved it = %v, %v, want a miss", tokens[i], ok, err)
			break
		}
		prev := current.Swap(&step{i + 1, make(chan struct{})})
		close(prev.next)
	}
	close(done)
	wg.Wait()
	if h.t.Failed() {
		return
	}
	last := tokens[renewals]
	h.wantUser(last, "alice")
	h.wantCart(last, map[string]int{"item-a": 3})
	h.wantUserSessions("alice", info(last, "alice", start, h.now()))
	h.wantCount(1)
	h.t.Logf("%d scans during %d renewals", scans.Load(), renewals)
}
