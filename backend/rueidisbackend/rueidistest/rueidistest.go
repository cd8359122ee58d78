// Package rueidistest runs the [conformance] suite on a Redis, or a Redis
// Cluster, that you name, without disturbing the keys already on it:
//
//	func TestConformanceOnMyRedis(t *testing.T) {
//		opt := rueidis.ClientOption{InitAddress: []string{"127.0.0.1:7000"}}
//		conformance.Run(t, rueidistest.Factory(opt))
//	}
//
// Every store [Factory] makes has a rueidis client and a key prefix of its
// own, [KeyPrefix] and 16 random hex digits, so the suite passes on a
// server that already holds data (yours, or another run's, even one
// running at the same time), and when its test ends the store's keys are
// deleted: only keys under its own prefix, found with SCAN MATCH on every
// node the client knows, the masters of a cluster among them. Nothing else
// is deleted, and the server is never flushed.
//
// A run that is killed (or hits the suite's watchdog) before its cleanups
// leaves keys under KeyPrefix, some of them without a TTL:
// redis-cli --scan --pattern 'retail-conformance:*' lists them.
//
// Each cleanup scans the whole keyspace of every node, once a subtest:
// quick on a test server, slow on one that holds millions of keys.
package rueidistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
	"github.com/retailkit/retail/conformance"
)

// KeyPrefix starts the key prefix of every store Factory makes. It holds
// no glob character, so SCAN MATCH takes it as it is.
const KeyPrefix = "retail-conformance:"

// cleanupTimeout bounds the deletion of one store's keys.
const cleanupTimeout = time.Minute

// Factory returns a conformance.Factory whose stores run on the Redis opt
// names: one address of a server, or one or more addresses of a cluster's
// nodes (rueidis finds out which), with whatever else opt sets
// (credentials, TLS). Each store gets a client made from opt and a prefix
// of its own (see the package documentation); when the test that made it
// ends, the store is closed, its keys deleted and its client closed. The
// suite runs with client-side caching, as a shop does; leave opt's
// DisableCache unset unless the server has no client tracking.
func Factory(opt rueidis.ClientOption) conformance.Factory {
	return func(tb testing.TB, clock retail.Clock, cfg conformance.Config) retail.Store {
		tb.Helper()
		prefix, err := uniquePrefix()
		if err != nil {
			tb.Fatalf("rueidistest: a random prefix: %v", err)
		}
		c, err := rueidis.NewClient(opt)
		if err != nil {
			tb.Fatalf("rueidistest: rueidis.NewClient(%v) = %v", opt.InitAddress, err)
		}
		tb.Cleanup(c.Close) // last: the cleanups run in reverse order
		tb.Cleanup(func() {
			if err := deleteWithRetries(c, prefix); err != nil {
				tb.Errorf("rueidistest: deleting the keys under %q: %v", prefix, err)
			}
		})
		s, err := rueidisbackend.New(c, rueidisbackend.Options{
			Prefix:      prefix,
			Clock:       clock,
			IdleTimeout: cfg.IdleTimeout,
			Lifetime:    cfg.Lifetime,
			TouchEvery:  cfg.TouchEvery,

			MaxSessionsPerUser: cfg.MaxSessionsPerUser,
		})
		if err != nil {
			tb.Fatalf("rueidistest: rueidisbackend.New() = %v", err)
		}
		// First: Close sends the views the store still adds up, so that
		// their keys are there to delete.
		tb.Cleanup(func() { s.Close() })
		return s
	}
}

// uniquePrefix returns KeyPrefix and 64 random bits in hex, and a colon.
func uniquePrefix() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return KeyPrefix + hex.EncodeToString(b[:]) + ":", nil
}

// deleteWithRetries runs deletePrefix up to three times, until it
// succeeds, so that a passing error (once, in CI, a DEL answered "context
// canceled" on a context nobody had cancelled) does not fail a test whose
// keys the next attempt deletes. Each attempt scans from the start;
// deleting is idempotent.
func deleteWithRetries(c rueidis.Client, prefix string) error {
	var err error
	for range 3 {
		if err = deletePrefix(c, prefix); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// deletePrefix deletes every key that starts with prefix on the Redis c
// talks to, and no other: it scans every node c knows (on a cluster, the
// masters and any replicas it was told of) with SCAN MATCH prefix*, and
// deletes what it finds through c. prefix holds no glob character.
func deletePrefix(c rueidis.Client, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	for addr, node := range c.Nodes() {
		var cursor uint64
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+"*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				return fmt.Errorf("SCAN on %s: %w", addr, err)
			}
			if len(e.Elements) > 0 {
				// One DEL a key: on a cluster the keys are on many slots.
				cmds := make(rueidis.Commands, len(e.Elements))
				for i, k := range e.Elements {
					cmds[i] = c.B().Del().Key(k).Build()
				}
				for _, r := range c.DoMulti(ctx, cmds...) {
					if err := r.Error(); err != nil {
						return fmt.Errorf("DEL: %w", err)
					}
				}
			}
			if e.Cursor == 0 {
				break
			}
			cursor = e.Cursor
		}
	}
	return nil
}
