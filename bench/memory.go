package main

// The memory group (-only memory): the server's used_memory a session, in
// retail's layout (as guests and as logged-in users) and in the book's.
// Each layout is loaded with -sessions sessions the way the shop makes
// them, in a database of its own emptied first (FLUSHDB, on the private
// server), so that it pays for its own hash tables' growth whatever was
// loaded before it:
//
// Session i views item-(i%1000), and every key is under memPrefix, as in
// the benchmark this group replaced (rueidisbackend's
// BenchmarkMemoryPerSession), so that its figures compare with those
// recorded then.
//
//	retail: StartSession (user "" for a guest), RefreshSession viewing the
//	        session's item, AddToCart of one of it, through the Store on a
//	        rueidis client with client-side caching (the defaults); the Store
//	        is closed before the reading, so that its pending views are in.
//	book:   loadBook (login field, recent entry, viewed:TOKEN, the view
//	        count, cart:TOKEN).
//
// The guests' and the book's sessions are then taken apart, part by part,
// and each part is credited with what its removal freed: for retail's
// guests the session key's TTL (PERSIST), the session's hash (DEL) and
// its index entry (ZREM); for the book the login field, the recent entry,
// the viewed sorted set and the cart. A hash table's bucket array goes
// with the part whose removal empties the table: the keyspace's with the
// last kind of key removed, the TTL table's with the TTLs. What no part
// frees (the shared view counts) is reported as other.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// memPrefix is every layout's key prefix. Key names' lengths move keys
// across the allocator's size classes (16 bytes apart at these sizes), so
// it has the length of the prefixes the figures recorded before came from
// (rueidisbackend's tests' "t<9 digits>-<n>:"): with retail's
// DefaultPrefix, "retail:", the session's hash, a viewed set and a cart
// each take 16 bytes less.
const memPrefix = "bench-memory:"

// The databases the memory group loads, one a layout, and empties before
// and after.
const (
	dbGuest = 13
	dbUser  = 14
	dbBook  = 15
)

// memLayout is one row of the memory report: the growth of used_memory a
// session, and the parts it was taken apart into, in the order taken.
type memLayout struct {
	name  string
	total float64
	parts []memPart
}

type memPart struct {
	name  string
	bytes float64
}

// memPiece is one part of the sessions to take apart: the command that
// removes it from session i (or, for TTLs, strips it), queued on p.
type memPiece struct {
	name string
	cmd  func(ctx context.Context, p redis.Pipeliner, i int)
}

// timeMemory runs the memory group and reports it on w.
func (b *bench) timeMemory(ctx context.Context, w io.Writer) error {
	rows, err := b.memory(ctx)
	if len(rows) > 0 {
		printMemory(w, b.cfg.sessions, rows)
	}
	return err
}

// memory loads each layout in its database and returns the growth of
// used_memory a session and the parts taken apart. It returns an error if
// a layout did not grow it.
func (b *bench) memory(ctx context.Context) ([]memLayout, error) {
	if b.srv.cluster {
		return nil, errors.New("the memory group needs one redis-server (it SELECTs databases), not a cluster")
	}
	n := b.cfg.sessions
	pop := memPopulation(b.pop)
	var rows []memLayout
	for _, v := range []struct {
		name string
		db   int
		user func(i int) string
	}{
		{"retail, guest", dbGuest, func(int) string { return "" }},
		{"retail, logged in", dbUser, func(i int) string { return pop.users[i] }},
	} {
		logf("memory: loading %d sessions in retail's layout (%s)", n, v.name)
		rc, err := b.dbClient(ctx, v.db)
		if err != nil {
			return nil, err
		}
		row := memLayout{name: v.name}
		total, err := usedMemoryDelta(ctx, rc, func() error {
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: b.srv.addrs, SelectDB: v.db, ForceSingleClient: true})
			if err != nil {
				return err
			}
			b.onClose(c.Close) // after the reading: a client's buffers are no session's
			s, err := rueidisbackend.New(c, rueidisbackend.Options{Prefix: memPrefix})
			if err != nil {
				return err
			}
			err = parallel(n, b.cfg.conc, func(i int) error { return shopSession(ctx, s, pop, i, v.user(i)) })
			return errors.Join(err, s.Close()) // Close sends the views still pending
		})
		if err != nil {
			return nil, err
		}
		row.total = total / float64(n)
		if v.db == dbGuest {
			row.parts, err = takeApart(ctx, rc, n, row.total, []memPiece{
				{"ttl", func(ctx context.Context, p redis.Pipeliner, i int) {
					p.Persist(ctx, retailSessionKey(memPrefix, pop.tokens[i]))
				}},
				{"session", func(ctx context.Context, p redis.Pipeliner, i int) {
					p.Del(ctx, retailSessionKey(memPrefix, pop.tokens[i]))
				}},
				{"index", func(ctx context.Context, p redis.Pipeliner, i int) {
					p.ZRem(ctx, memPrefix+"{sessions}:seen", retail.SessionID(pop.tokens[i]))
				}},
			})
			if err != nil {
				return nil, err
			}
		}
		rows = append(rows, row)
	}

	logf("memory: loading %d sessions in the book's layout", n)
	rc, err := b.dbClient(ctx, dbBook)
	if err != nil {
		return nil, err
	}
	k := bookKeys(memPrefix)
	total, err := usedMemoryDelta(ctx, rc, func() error { return loadBook(ctx, rc, k, pop, n) })
	if err != nil {
		return nil, err
	}
	book := memLayout{name: "book", total: total / float64(n)}
	book.parts, err = takeApart(ctx, rc, n, book.total, []memPiece{
		{"login", func(ctx context.Context, p redis.Pipeliner, i int) { p.HDel(ctx, k.login(), pop.tokens[i]) }},
		{"recent", func(ctx context.Context, p redis.Pipeliner, i int) { p.ZRem(ctx, k.recent(), pop.tokens[i]) }},
		{"viewed", func(ctx context.Context, p redis.Pipeliner, i int) { p.Del(ctx, k.viewed(pop.tokens[i])) }},
		{"cart", func(ctx context.Context, p redis.Pipeliner, i int) { p.Del(ctx, k.cart(pop.tokens[i])) }},
	})
	if err != nil {
		return nil, err
	}
	rows = append(rows, book)

	// Leave the server as the other groups expect it.
	for _, db := range []int{dbGuest, dbUser, dbBook} {
		if _, err := b.dbClient(ctx, db); err != nil {
			return nil, err
		}
	}
	for _, r := range rows {
		if r.total <= 0 {
			return rows, fmt.Errorf("memory: %s grew used_memory by %.1f bytes a session", r.name, r.total)
		}
	}
	return rows, nil
}

// memPopulation is pop's sessions, session i having viewed item-(i%1000).
func memPopulation(pop *population) *population {
	m := &population{tokens: pop.tokens, users: pop.users, loaded: make([]string, len(pop.tokens))}
	for i := range m.loaded {
		m.loaded[i] = "item-" + strconv.Itoa(i%1000)
	}
	return m
}

// shopSession makes session i as the shop does: a login (or a guest's
// first visit), a page view of its item, one cart line of it.
func shopSession(ctx context.Context, s retail.Store, pop *population, i int, user string) error {
	token, item := pop.tokens[i], pop.loaded[i]
	if _, err := s.StartSession(ctx, token, user); err != nil {
		return err
	}
	if _, ok, err := s.RefreshSession(ctx, token, item); err != nil {
		return err
	} else if !ok {
		return errors.New("RefreshSession found no live session just after StartSession")
	}
	return s.AddToCart(ctx, token, item, 1)
}

// retailSessionKey is the key of token's session in retail's layout, as
// the rueidisbackend package doc gives it.
func retailSessionKey(prefix, token string) string {
	id := strings.NewReplacer("%", "%25", "}", "%7D").Replace(retail.SessionID(token))
	return prefix + "session:{" + id + "}"
}

// dbClient returns a go-redis client of database db of the private
// server, emptied first.
func (b *bench) dbClient(ctx context.Context, db int) (*redis.Client, error) {
	c := redis.NewClient(&redis.Options{Addr: b.srv.addrs[0], DB: db, PoolSize: b.cfg.conc})
	b.onClose(func() { c.Close() })
	return c, c.FlushDB(ctx).Err()
}

// takeApart removes the pieces of sessions 0..n-1 in turn, in pipelines
// of 1,000 sessions, and returns what each freed a session, then as
// "other" what none freed of total.
func takeApart(ctx context.Context, c *redis.Client, n int, total float64, pieces []memPiece) ([]memPart, error) {
	var parts []memPart
	other := total
	for _, pc := range pieces {
		logf("memory: taking apart: %s", pc.name)
		freed, err := usedMemoryDelta(ctx, c, func() error {
			const chunk = 1000
			for from := 0; from < n; from += chunk {
				cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
					for i := from; i < min(n, from+chunk); i++ {
						pc.cmd(ctx, p, i)
					}
					return nil
				})
				if err != nil {
					return err
				}
				for _, cmd := range cmds {
					if err := cmd.Err(); err != nil {
						return err
					}
				}
			}
			// Redis shrinks a hash table that deletions left nearly empty
			// in its cron, ten times a second: let it, so that the table's
			// bucket array is credited to the part whose removal emptied
			// it, not to whichever comes next.
			time.Sleep(300 * time.Millisecond)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("memory: taking apart %s: %w", pc.name, err)
		}
		part := memPart{pc.name, -freed / float64(n)}
		other -= part.bytes
		parts = append(parts, part)
	}
	return append(parts, memPart{"other", other}), nil
}

// usedMemoryDelta returns how much load grew the server's used_memory.
func usedMemoryDelta(ctx context.Context, c *redis.Client, load func() error) (float64, error) {
	before, err := usedMemory(ctx, c)
	if err != nil {
		return 0, err
	}
	if err := load(); err != nil {
		return 0, err
	}
	after, err := usedMemory(ctx, c)
	return float64(after - before), err
}

func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(infoField(info, "used_memory"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO memory used_memory: %w", err)
	}
	return v, nil
}

// printMemory writes the memory report.
func printMemory(w io.Writer, n int, rows []memLayout) {
	fmt.Fprintf(w, "\nmemory: growth of used_memory a session, %d sessions a layout (each in a database of its own)\n", n)
	const format = "%-19s %10s  %s\n"
	fmt.Fprintf(w, format, "layout", "B/session", "parts (B/session, in the order taken apart)")
	fmt.Fprintln(w, strings.Repeat("-", 100))
	for _, r := range rows {
		parts := make([]string, len(r.parts))
		for i, p := range r.parts {
			parts[i] = fmt.Sprintf("%s %.1f", p.name, p.bytes)
		}
		if len(parts) == 0 {
			parts = []string{"(not taken apart)"}
		}
		fmt.Fprintf(w, format, r.name, fmt.Sprintf("%.1f", r.total), strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "A session: StartSession (a login, or a guest's first visit), RefreshSession viewing an item, one cart")
	fmt.Fprintln(w, "line; the book's: login field, recent entry, viewed:TOKEN, the view count, cart:TOKEN. A part is what")
	fmt.Fprintln(w, "removing it freed (retail ttl: PERSIST of the session key; session: DEL of its hash; index: ZREM from")
	fmt.Fprintln(w, "{sessions}:seen); a hash table's buckets go with the part that emptied it; other is what no part freed.")
}
