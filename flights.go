package retail

import "sync"

// flights coalesces concurrent misses for one page key: the first caller
// (the leader) renders, the others wait on its flight. The zero value is
// ready to use.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

// flight is one render in progress.
type flight struct {
	done chan struct{} // closed by the first release
	once sync.Once
	val  fillResult // final once done is closed
}

// release sets f's value and wakes its waiters; later calls do nothing.
func (f *flight) release(v fillResult) {
	f.once.Do(func() {
		f.val = v
		close(f.done)
	})
}

// join returns the flight for key, or registers a new one, in which case
// leader is true and the caller must render, then call leave.
func (g *flights) join(key string) (f *flight, leader bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.m[key]; f != nil {
		return f, false
	}
	if g.m == nil {
		g.m = make(map[string]*flight)
	}
	f = &flight{done: make(chan struct{})}
	g.m[key] = f
	return f, true
}

// leave ends the leader's flight for key: later misses start a new one.
func (g *flights) leave(key string) {
	g.mu.Lock()
	delete(g.m, key)
	g.mu.Unlock()
}
