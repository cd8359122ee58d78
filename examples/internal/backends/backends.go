// Package backends opens the Store an example runs on: the memory backend,
// or the Redis backend at the addresses of a -redis flag.
package backends

import (
	"fmt"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// Options configures Open.
type Options struct {
	// IdleTimeout and Lifetime bound sessions (see the backends' options);
	// the retail defaults if zero.
	IdleTimeout, Lifetime time.Duration

	// Clock is the Store's clock; retail.SystemClock if nil.
	Clock retail.Clock

	// The options below apply to Redis only.

	// Prefix is put before every key; the backend's default if empty.
	Prefix string

	// CheckAddr, if not nil, vets every address: those given and, for a
	// cluster, every node the server reports. Open fails with its error.
	CheckAddr func(addr string) error
}

// Open returns a memory Store if addrs is empty, and otherwise a Store on
// the Redis at addrs, one server or nodes of a Redis Cluster (rueidis finds
// out which). It also returns the backend's name ("memory", "Redis" or
// "Redis Cluster") and a function that closes the Store and its client.
func Open(addrs []string, opts Options) (store retail.Store, name string, closeFn func(), err error) {
	if len(addrs) == 0 {
		s, err := memory.New(memory.Options{Clock: opts.Clock, IdleTimeout: opts.IdleTimeout, Lifetime: opts.Lifetime})
		if err != nil {
			return nil, "", nil, err
		}
		return s, "memory", func() { s.Close() }, nil
	}
	check := opts.CheckAddr
	if check == nil {
		check = func(string) error { return nil }
	}
	for _, a := range addrs {
		if err := check(a); err != nil {
			return nil, "", nil, err
		}
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: addrs,
		// On a cluster, learn of slots that moved (see rueidisbackend's
		// "Moving slots").
		ClusterOption: rueidis.ClusterOption{ShardsRefreshInterval: 10 * time.Second},
	})
	if err != nil {
		return nil, "", nil, err
	}
	for a := range client.Nodes() {
		if err := check(a); err != nil {
			client.Close()
			return nil, "", nil, fmt.Errorf("the server reports node %s: %w", a, err)
		}
	}
	s, err := rueidisbackend.New(client, rueidisbackend.Options{
		Prefix: opts.Prefix, Clock: opts.Clock, IdleTimeout: opts.IdleTimeout, Lifetime: opts.Lifetime,
	})
	if err != nil {
		client.Close()
		return nil, "", nil, err
	}
	name = "Redis"
	if client.Mode() == rueidis.ClientModeCluster {
		name = "Redis Cluster"
	}
	return s, name, func() { s.Close(); client.Close() }, nil
}
