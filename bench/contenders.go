package main

// The contenders: retail's Store on its Redis backend, and the book's
// chapter 2 code ("Redis in Action", listings 2.1-2.9) ported command for
// command to the Go clients an engineer would reach for:
//
//	update_token: HSET login: token user; ZADD recent: ts token;
//	              if item: ZADD viewed:token ts item; ZREMRANGEBYRANK viewed:token 0 -26;
//	                       ZINCRBY viewed: -1 item
//	check_token:  HGET login: token
//	add_to_cart:  count <= 0: HDEL cart:token item, else HSET cart:token item count
//	item_rank:    ZRANK viewed: item (can_cache's lookup)
//	clean_full_sessions: ZCARD recent:; ZRANGE recent: 0 batch-1; DEL viewed:* cart:*;
//	              HDEL login: ...; ZREM recent: ...
//
// The book's Python calls conn.hrem, which does not exist; HDEL is what it
// means. Its timestamps are float seconds, as time.time() gives.
//
// Retail does more per call than the book, by contract: a session write
// checks on the server that the session is live, the last-seen stamp never
// goes back, every key has a TTL, and cleaning never removes a session
// refreshed during the pass. It also does less where it can: a visit within
// the touch interval that changes nothing is served from the client-side
// cache, and item views are added up in the process and flushed every
// second. See backend/rueidisbackend's package doc.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// shop is the per-request API every contender implements; a retail.Store
// already does. RecentItems (newest first) and Cart are for the checks.
type shop interface {
	UpdateToken(ctx context.Context, token, user, item string) error
	CheckToken(ctx context.Context, token string) (user string, ok bool, err error)
	AddToCart(ctx context.Context, token, item string, count int) error
	ItemRank(ctx context.Context, item string) (rank int, ok bool, err error)
	RecentItems(ctx context.Context, token string) ([]string, error)
	Cart(ctx context.Context, token string) (map[string]int, error)
}

const (
	nameRetail        = "retail (cache)"
	nameRetailNoCache = "retail (nocache)"
	nameNaive         = "book go-redis"
	namePipelined     = "book go-redis pipeline"
	nameDoMulti       = "book rueidis DoMulti"
)

// shopNames are the contenders of the per-request operations; the first
// is the baseline of every ratio.
var shopNames = []string{nameRetail, nameRetailNoCache, nameNaive, namePipelined, nameDoMulti}

// newShop returns contender name with its keys under prefix, on clients of
// its own.
func (b *bench) newShop(name, prefix string) (shop, error) {
	switch name {
	case nameRetail, nameRetailNoCache:
		return b.retail(prefix, name == nameRetail)
	case nameNaive, namePipelined:
		return &bookGoRedis{c: b.goredis(), k: bookKeys(prefix), pipelined: name == namePipelined}, nil
	case nameDoMulti:
		c, err := b.rueidis(false)
		return &bookDoMulti{c: c, k: bookKeys(prefix)}, err
	}
	return nil, fmt.Errorf("no contender %q", name)
}

// retail returns retail's Store under prefix on a client of its own. cache
// false turns client-side caching off both ways a user would: the client
// without tracking and a negative CacheTTL.
func (b *bench) retail(prefix string, cache bool) (*rueidisbackend.Store, error) {
	c, err := b.rueidis(!cache)
	if err != nil {
		return nil, err
	}
	opts := rueidisbackend.Options{Prefix: prefix}
	if !cache {
		opts.CacheTTL = -1
	}
	s, err := rueidisbackend.New(c, opts)
	if err != nil {
		return nil, err
	}
	b.onClose(func() { s.Close() }) // before the client's, which onClose registered first
	return s, nil
}

// bookKeys is the book's key layout under a prefix.
type bookKeys string

func (k bookKeys) login() string              { return string(k) + "login:" }
func (k bookKeys) recent() string             { return string(k) + "recent:" }
func (k bookKeys) views() string              { return string(k) + "viewed:" }
func (k bookKeys) viewed(token string) string { return string(k) + "viewed:" + token }
func (k bookKeys) cart(token string) string   { return string(k) + "cart:" + token }

// bookTime is the book's time.time().
func bookTime() float64 { return float64(time.Now().UnixMicro()) / 1e6 }

// bookGoRedis sends the book's commands through go-redis: one round trip
// each, as the book's Python does, or update_token's five in one Pipeline
// (one round trip per node). The other operations are one command each,
// which both send alike.
type bookGoRedis struct {
	c         redis.UniversalClient
	k         bookKeys
	pipelined bool
}

func (b *bookGoRedis) UpdateToken(ctx context.Context, token, user, item string) error {
	ts := bookTime()
	send := func(c redis.Cmdable) error {
		errs := []error{
			c.HSet(ctx, b.k.login(), token, user).Err(),
			c.ZAdd(ctx, b.k.recent(), redis.Z{Score: ts, Member: token}).Err(),
		}
		if item != "" {
			v := b.k.viewed(token)
			errs = append(errs,
				c.ZAdd(ctx, v, redis.Z{Score: ts, Member: item}).Err(),
				c.ZRemRangeByRank(ctx, v, 0, -26).Err(),
				c.ZIncrBy(ctx, b.k.views(), -1, item).Err())
		}
		return errors.Join(errs...)
	}
	if !b.pipelined {
		return send(b.c)
	}
	_, err := b.c.Pipelined(ctx, func(p redis.Pipeliner) error { return send(p) })
	return err
}

func (b *bookGoRedis) CheckToken(ctx context.Context, token string) (string, bool, error) {
	u, err := b.c.HGet(ctx, b.k.login(), token).Result()
	if err == redis.Nil {
		return "", false, nil
	}
	return u, err == nil, err
}

func (b *bookGoRedis) AddToCart(ctx context.Context, token, item string, count int) error {
	if count <= 0 {
		return b.c.HDel(ctx, b.k.cart(token), item).Err()
	}
	return b.c.HSet(ctx, b.k.cart(token), item, count).Err()
}

func (b *bookGoRedis) ItemRank(ctx context.Context, item string) (int, bool, error) {
	r, err := b.c.ZRank(ctx, b.k.views(), item).Result()
	if err == redis.Nil {
		return 0, false, nil
	}
	return int(r), err == nil, err
}

func (b *bookGoRedis) RecentItems(ctx context.Context, token string) ([]string, error) {
	return b.c.ZRevRange(ctx, b.k.viewed(token), 0, -1).Result()
}

func (b *bookGoRedis) Cart(ctx context.Context, token string) (map[string]int, error) {
	m, err := b.c.HGetAll(ctx, b.k.cart(token)).Result()
	out := make(map[string]int, len(m))
	for f, v := range m {
		if out[f], err = strconv.Atoi(v); err != nil {
			return nil, err
		}
	}
	return out, err
}

// bookDoMulti sends the same commands through rueidis, update_token's in
// one DoMulti; rueidis pipelines concurrent calls onto shared connections.
// No client-side caching: the book's reads are plain commands.
type bookDoMulti struct {
	c rueidis.Client
	k bookKeys
}

func (b *bookDoMulti) UpdateToken(ctx context.Context, token, user, item string) error {
	ts := bookTime()
	cmds := rueidis.Commands{
		b.c.B().Hset().Key(b.k.login()).FieldValue().FieldValue(token, user).Build(),
		b.c.B().Zadd().Key(b.k.recent()).ScoreMember().ScoreMember(ts, token).Build(),
	}
	if item != "" {
		v := b.k.viewed(token)
		cmds = append(cmds,
			b.c.B().Zadd().Key(v).ScoreMember().ScoreMember(ts, item).Build(),
			b.c.B().Zremrangebyrank().Key(v).Start(0).Stop(-26).Build(),
			b.c.B().Zincrby().Key(b.k.views()).Increment(-1).Member(item).Build())
	}
	for _, r := range b.c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

func (b *bookDoMulti) CheckToken(ctx context.Context, token string) (string, bool, error) {
	u, err := b.c.Do(ctx, b.c.B().Hget().Key(b.k.login()).Field(token).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", false, nil
	}
	return u, err == nil, err
}

func (b *bookDoMulti) AddToCart(ctx context.Context, token, item string, count int) error {
	if count <= 0 {
		return b.c.Do(ctx, b.c.B().Hdel().Key(b.k.cart(token)).Field(item).Build()).Error()
	}
	return b.c.Do(ctx, b.c.B().Hset().Key(b.k.cart(token)).FieldValue().FieldValue(item, strconv.Itoa(count)).Build()).Error()
}

func (b *bookDoMulti) ItemRank(ctx context.Context, item string) (int, bool, error) {
	r, err := b.c.Do(ctx, b.c.B().Zrank().Key(b.k.views()).Member(item).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, false, nil
	}
	return int(r), err == nil, err
}

func (b *bookDoMulti) RecentItems(ctx context.Context, token string) ([]string, error) {
	return b.c.Do(ctx, b.c.B().Zrevrange().Key(b.k.viewed(token)).Start(0).Stop(-1).Build()).AsStrSlice()
}

func (b *bookDoMulti) Cart(ctx context.Context, token string) (map[string]int, error) {
	m, err := b.c.Do(ctx, b.c.B().Hgetall().Key(b.k.cart(token)).Build()).AsIntMap()
	out := make(map[string]int, len(m))
	for f, v := range m {
		out[f] = int(v)
	}
	return out, err
}

// loadShop stores sessions 0..n-1 of pop through s, each having viewed one
// item and holding one cart line of it.
func loadShop(ctx context.Context, s shop, pop *population, n, conc int) error {
	return parallel(n, conc, func(i int) error {
		item := pop.loaded[i]
		if err := s.UpdateToken(ctx, pop.tokens[i], pop.users[i], item); err != nil {
			return err
		}
		return s.AddToCart(ctx, pop.tokens[i], item, 1)
	})
}

// loadBook stores what loadShop does in the book's layout, in pipelines of
// 500 sessions: loading is not measured.
func loadBook(ctx context.Context, c redis.UniversalClient, k bookKeys, pop *population, n int) error {
	const chunk = 500
	return parallel((n+chunk-1)/chunk, 8, func(ci int) error {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			ts := bookTime()
			for i := ci * chunk; i < min(n, (ci+1)*chunk); i++ {
				tok, item := pop.tokens[i], pop.loaded[i]
				p.HSet(ctx, k.login(), tok, pop.users[i])
				p.ZAdd(ctx, k.recent(), redis.Z{Score: ts, Member: tok})
				p.ZAdd(ctx, k.viewed(tok), redis.Z{Score: ts, Member: item})
				p.ZIncrBy(ctx, k.views(), -1, item)
				p.HSet(ctx, k.cart(tok), item, 1)
			}
			return nil
		})
		return err
	})
}

// cleaner is one way to remove every session: the book's loop or retail's
// CleanSessions, at a batch size.
type cleaner struct {
	name string
	// load stores sessions 0..n-1 of the population.
	load func(ctx context.Context, n int) error
	// clean removes every session, one pass at a time, calling pass with
	// each pass's duration, and returns how many it removed.
	clean func(ctx context.Context, pass func(time.Duration)) (int, error)
	// left returns an error if anything of sessions 0..n-1 is left, or if
	// the view counts are gone (the book keeps them, and so must retail).
	left func(ctx context.Context, n int) error
}

func cleanerName(book bool, batch int) string {
	if book {
		return fmt.Sprintf("book loop, batch %d", batch)
	}
	return fmt.Sprintf("retail CleanSessions(0,%d)", batch)
}

// newCleaner returns the cleaner for batch, the book's or retail's, with
// its keys under prefix.
func (b *bench) newCleaner(book bool, batch int, prefix string, pop *population) (cleaner, error) {
	c := cleaner{name: cleanerName(book, batch)}
	if book {
		rc, k := b.goredis(), bookKeys(prefix)
		c.load = func(ctx context.Context, n int) error { return loadBook(ctx, rc, k, pop, n) }
		c.clean = func(ctx context.Context, pass func(time.Duration)) (int, error) {
			return bookClean(ctx, rc, k, batch, b.srv.cluster, pass)
		}
		c.left = func(ctx context.Context, n int) error { return bookLeft(ctx, rc, k, pop, n) }
		return c, nil
	}
	s, err := b.retail(prefix, true)
	if err != nil {
		return c, err
	}
	c.load = func(ctx context.Context, n int) error { return loadShop(ctx, s, pop, n, b.cfg.conc) }
	c.clean = func(ctx context.Context, pass func(time.Duration)) (int, error) {
		removed := 0
		for {
			t0 := time.Now()
			n, err := s.CleanSessions(ctx, 0, batch)
			if removed += n; err != nil || n == 0 {
				return removed, err
			}
			pass(time.Since(t0))
		}
	}
	c.left = func(ctx context.Context, n int) error {
		count, err := s.SessionCount(ctx)
		if err != nil {
			return err
		}
		var left atomic.Int64
		err = parallel(n, 16, func(i int) error {
			_, ok, err1 := s.CheckToken(ctx, pop.tokens[i])
			recent, err2 := s.RecentItems(ctx, pop.tokens[i])
			cart, err3 := s.Cart(ctx, pop.tokens[i])
			if ok || len(recent) > 0 || len(cart) > 0 {
				left.Add(1)
			}
			return errors.Join(err1, err2, err3)
		})
		if err != nil {
			return err
		}
		if count != 0 || left.Load() != 0 {
			return fmt.Errorf("left behind: SessionCount %d, %d sessions with a user, recent items or a cart", count, left.Load())
		}
		if top, err := s.TopItems(ctx, 1); err != nil || len(top) == 0 {
			return fmt.Errorf("the view counts went with the sessions (TopItems: %v, %v)", top, err)
		}
		return nil
	}
	return c, nil
}

// bookClean is the book's clean_full_sessions with a limit of 0, run until
// recent: is empty (where the book would sleep a second). On a cluster the
// book's one DEL of every viewed: and cart: key fails with CROSSSLOT, so
// there the DELs go one key each in a pipeline: the least change that
// makes the book's code run.
func bookClean(ctx context.Context, c redis.UniversalClient, k bookKeys, batch int, cluster bool, pass func(time.Duration)) (int, error) {
	removed := 0
	for {
		t0 := time.Now()
		size, err := c.ZCard(ctx, k.recent()).Result()
		if err != nil || size == 0 {
			return removed, err
		}
		tokens, err := c.ZRange(ctx, k.recent(), 0, min(size, int64(batch))-1).Result()
		if err != nil {
			return removed, err
		}
		keys := make([]string, 0, 2*len(tokens))
		members := make([]any, len(tokens))
		for i, t := range tokens {
			keys, members[i] = append(keys, k.viewed(t), k.cart(t)), t
		}
		if cluster {
			_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, key := range keys {
					p.Del(ctx, key)
				}
				return nil
			})
		} else {
			err = c.Del(ctx, keys...).Err()
		}
		if err == nil {
			err = c.HDel(ctx, k.login(), tokens...).Err()
		}
		if err == nil {
			err = c.ZRem(ctx, k.recent(), members...).Err()
		}
		if err != nil {
			return removed, err
		}
		removed += len(tokens)
		pass(time.Since(t0))
	}
}

// bookLeft is cleaner.left in the book's layout.
func bookLeft(ctx context.Context, c redis.UniversalClient, k bookKeys, pop *population, n int) error {
	recent, err1 := c.ZCard(ctx, k.recent()).Result()
	logins, err2 := c.HLen(ctx, k.login()).Result()
	views, err3 := c.ZCard(ctx, k.views()).Result()
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	var keys atomic.Int64
	err := parallel(n, 16, func(i int) error {
		m, err := c.Exists(ctx, k.viewed(pop.tokens[i])).Result()
		keys.Add(m)
		if err == nil {
			m, err = c.Exists(ctx, k.cart(pop.tokens[i])).Result()
			keys.Add(m)
		}
		return err
	})
	if err != nil {
		return err
	}
	if recent != 0 || logins != 0 || keys.Load() != 0 {
		return fmt.Errorf("left behind: %d recent: entries, %d login: fields, %d viewed:/cart: keys", recent, logins, keys.Load())
	}
	if views == 0 {
		return errors.New("the view counts went with the sessions")
	}
	return nil
}
