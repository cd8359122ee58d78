package rueidisbackend

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// ownWrites gives read-your-writes over the client-side cache.
//
// The server invalidates a cached key when it changes, but the message
// travels on the connection that cached the key, which is not always the
// one the write went on, so a read right after this process's own write can
// still find the old value in the cache. So each write of a cacheable key
// records what the key now holds (a hash of the value, or "absent"). A
// cached read of a recorded key that disagrees is read again from the
// server; once a cached read agrees, the cache has caught up (a cache entry
// is only ever replaced by a newer server reply) and the record is dropped.
// No timing is assumed. Records of keys nobody reads again are dropped
// after forgetAfter, long after any invalidation has arrived (3.5 ms at
// worst measured on loopback), so that the set stays small.
//
// Records are made after the write returns, and a server read replaces a
// record only if no newer write of ours replaced it meanwhile (gen), so a
// slow read can never stand in for a newer write.
type ownWrites struct {
	n atomic.Int64 // records held, so reads skip the lock when none
	// newest is when the newest record was made, on ownClock: once it is
	// older than forgetAfter, every record is, and reads skip the lock as
	// well (after a burst of writes, a read-only stretch finds hundreds of
	// thousands of stale records, swept only by the next write).
	newest atomic.Int64
	gen    atomic.Uint64 // numbers records
	shards [64]ownShard
}

type ownShard struct {
	mu    sync.Mutex
	m     map[record]written
	swept time.Duration // when records older than forgetAfter were last dropped
}

// record names what reads of a key answer: a 128-bit seeded hash of the
// key. A shard's map then holds no pointer for the garbage collector to
// follow, and a lookup reads no key elsewhere in memory. Under load the
// records number hundreds of thousands (two per session written in the
// last forgetAfter); with the keys themselves as map keys, they cost
// UpdateToken a sixth of its client CPU (see docs/performance.md). Two
// keys share a record with probability 2^-128.
type record struct{ a, b uint64 }

var recordSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func recordOf(key string) record {
	return record{maphash.String(recordSeeds[0], key), maphash.String(recordSeeds[1], key)}
}

// all names the HGETALL reads of the hash whose HMGET reads r names: they
// answer something else.
func (r record) all() record { return record{r.a, ^r.b} }

type written struct {
	sum    uint64 // maphash of the value; 0 with absent or unknown
	absent bool
	// unknown is whether the value is not known: the key changed, and
	// reads go to the server until one has told what it holds.
	unknown bool
	at      time.Duration // when, on ownClock
	gen     uint64
}

const forgetAfter = 10 * time.Second

// digestSeed seeds the hashes of values (records are keyed by recordSeeds).
var digestSeed = maphash.MakeSeed()

// ownClock returns the time on the process's monotonic clock.
func ownClock() time.Duration { return time.Since(ownEpoch) }

var ownEpoch = time.Now()

func (o *ownWrites) shard(r record) *ownShard {
	return &o.shards[r.a%uint64(len(o.shards))]
}

// wrote records that the key r names now holds value.
func (o *ownWrites) wrote(r record, value []byte) {
	o.put(r, written{sum: maphash.Bytes(digestSeed, value)})
}

// wroteArray records that a read of the key r names answers the array
// elems, as HMGET of the fields a script wrote and returned.
func (o *ownWrites) wroteArray(r record, elems []rueidis.RedisMessage) {
	sum, ok := digestArray(elems)
	if !ok {
		o.changed(r)
		return
	}
	o.put(r, written{sum: sum})
}

// wroteStrings records that the hash fields that reads of the key r name
// now hold vals, "" standing for an absent field: as wroteArray does for a
// reply of those fields.
func (o *ownWrites) wroteStrings(r record, vals ...string) {
	o.put(r, written{sum: digestStrings(vals...)})
}

// digestStrings is digestArray of an array reply of vals, "" standing for
// nil.
func digestStrings(vals ...string) uint64 {
	var h maphash.Hash
	h.SetSeed(digestSeed)
	h.WriteString("array\x00")
	for _, v := range vals {
		if v == "" {
			h.WriteString("\x01nil")
		} else {
			h.WriteString(v)
		}
		h.WriteByte(0)
	}
	return h.Sum64()
}

// deleted records that the key r names no longer exists.
func (o *ownWrites) deleted(r record) { o.put(r, written{absent: true}) }

// changed records that the key r names changed to a value the caller does
// not know: a script wrote some of a hash's fields, say.
func (o *ownWrites) changed(r record) { o.put(r, written{unknown: true}) }

func (o *ownWrites) put(r record, w written) {
	w.gen, w.at = o.gen.Add(1), ownClock()
	for n := o.newest.Load(); n < int64(w.at) && !o.newest.CompareAndSwap(n, int64(w.at)); n = o.newest.Load() {
	}
	sh := o.shard(r)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m == nil {
		sh.m = make(map[record]written)
	}
	held := len(sh.m)
	sh.m[r] = w
	if len(sh.m) > held {
		o.n.Add(1)
	}
	if w.at-sh.swept > time.Second {
		sh.swept = w.at
		for k, v := range sh.m {
			if w.at-v.at > forgetAfter {
				delete(sh.m, k)
				o.n.Add(-1)
			}
		}
	}
}

// fresh reports whether a cached read of the key r names (msg, or a nil
// reply if err is a Redis nil) may be returned, dropping the record once
// the cache agrees. If not, gen identifies the record to pass to seen.
func (o *ownWrites) fresh(r record, msg rueidis.RedisMessage, err error) (ok bool, gen uint64) {
	if o.n.Load() == 0 || ownClock()-time.Duration(o.newest.Load()) > forgetAfter {
		return true, 0
	}
	sh := o.shard(r)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	w, found := sh.m[r]
	if !found {
		return true, 0
	}
	if matches(w, msg, err) || ownClock()-w.at > forgetAfter {
		delete(sh.m, r)
		o.n.Add(-1)
		return true, 0
	}
	return false, w.gen
}

// seen notes a server read of the key r names made after fresh returned
// gen: if another process has written the key since our write, the cache
// is to be compared with that value from now on.
func (o *ownWrites) seen(r record, gen uint64, msg rueidis.RedisMessage, err error) {
	sh := o.shard(r)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	w, ok := sh.m[r]
	if !ok || w.gen != gen || matches(w, msg, err) {
		return
	}
	if rueidis.IsRedisNil(err) || absent(msg) {
		w.absent, w.sum = true, 0
	} else if sum, ok := digest(msg); ok {
		w.absent, w.sum = false, sum
	} else {
		return
	}
	w.unknown = false
	sh.m[r] = w
}

func matches(w written, msg rueidis.RedisMessage, err error) bool {
	if w.unknown {
		return false
	}
	if rueidis.IsRedisNil(err) || absent(msg) {
		return w.absent
	}
	sum, ok := digest(msg)
	return ok && !w.absent && sum == w.sum
}

// absent reports whether a reply tells that its key does not exist: nil,
// or, from HGETALL or HMGET, an empty map or an array of nils.
func absent(msg rueidis.RedisMessage) bool {
	if msg.IsNil() {
		return true
	}
	if msg.IsMap() {
		m, err := msg.AsStrMap()
		return err == nil && len(m) == 0
	}
	if !msg.IsArray() {
		return false
	}
	elems, _ := msg.ToArray()
	for _, e := range elems {
		if !e.IsNil() {
			return false
		}
	}
	return true
}

// digest hashes a reply: a string's bytes, an array's elements in order,
// or a map's fields and values in field order.
func digest(msg rueidis.RedisMessage) (uint64, bool) {
	if b, err := msg.AsBytes(); err == nil {
		return maphash.Bytes(digestSeed, b), true
	}
	if msg.IsArray() {
		elems, _ := msg.ToArray()
		return digestArray(elems)
	}
	var h maphash.Hash
	h.SetSeed(digestSeed)
	m, err := msg.AsStrMap()
	if err != nil {
		return 0, false
	}
	fields := make([]string, 0, len(m))
	for f := range m {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	h.WriteString("hash\x00")
	for _, f := range fields {
		h.WriteString(f)
		h.WriteByte(0)
		h.WriteString(m[f])
		h.WriteByte(0)
	}
	return h.Sum64(), true
}

// digestArray hashes the elements of an array reply, strings or nils.
func digestArray(elems []rueidis.RedisMessage) (uint64, bool) {
	var h maphash.Hash
	h.SetSeed(digestSeed)
	h.WriteString("array\x00")
	for _, e := range elems {
		if e.IsNil() {
			h.WriteString("\x01nil")
		} else if b, err := e.AsBytes(); err == nil {
			h.Write(b)
		} else {
			return 0, false
		}
		h.WriteByte(0)
	}
	return h.Sum64(), true
}
