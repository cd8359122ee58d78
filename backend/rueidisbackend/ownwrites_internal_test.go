package rueidisbackend

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// TestOwnWrites_RecordsAreApart checks that the records of two keys, and
// of a hash's HMGET and HGETALL reads, are apart: a write recorded for one
// leaves the others' reads as they were.
func TestOwnWrites_RecordsAreApart(t *testing.T) {
	var o ownWrites
	a, b := recordOf("p:session:{a}"), recordOf("p:session:{b}")
	o.deleted(a)       // a read of a answers nil
	o.changed(a.all()) // a read of all of a goes to the server
	o.changed(b)
	nilReply := func(r record) bool {
		ok, _ := o.fresh(r, rueidis.RedisMessage{}, rueidis.Nil)
		return ok
	}
	if nilReply(b) || nilReply(a.all()) {
		t.Fatal("a cached read of a key changed to a value not known was trusted")
	}
	if !nilReply(a) {
		t.Fatal("a cached nil for a key recorded as deleted was not trusted")
	}
	if got := o.n.Load(); got != 2 {
		t.Fatalf("%d records held after the deleted key's cache agreed, want 2", got)
	}
	if !nilReply(recordOf("p:session:{c}")) {
		t.Fatal("a cached read of a key never written was not trusted")
	}
}

// TestOwnWrites_ReadsSkipTheRecordsOnceAllAreStale checks that once every
// record is older than forgetAfter a read takes no lock (the shard's lock
// is held by the test meanwhile), and that a recent record still holds
// reads when older ones are stale.
func TestOwnWrites_ReadsSkipTheRecordsOnceAllAreStale(t *testing.T) {
	var o ownWrites
	old, recent := recordOf("p:row:old"), recordOf("p:row:recent")
	trusted := func(r record) bool {
		ok, _ := o.fresh(r, rueidis.RedisMessage{}, rueidis.Nil)
		return ok
	}
	o.changed(old)
	ageAll(&o, 2*forgetAfter)
	sh := o.shard(old)
	sh.mu.Lock()
	done := make(chan bool)
	go func() { done <- trusted(old) }()
	select {
	case ok := <-done:
		sh.mu.Unlock()
		if !ok {
			t.Fatal("a read was held by a record older than forgetAfter")
		}
	case <-time.After(10 * time.Second):
		sh.mu.Unlock()
		<-done
		t.Fatal("a read waited on a shard's lock though every record was stale")
	}

	o.changed(old)
	ageAll(&o, 2*forgetAfter)
	o.changed(recent)
	if trusted(recent) {
		t.Fatal("a cached read of a key changed just now was trusted beside stale records")
	}
}

// ageAll makes every record of o, and the newest, d older.
func ageAll(o *ownWrites, d time.Duration) {
	for i := range o.shards {
		sh := &o.shards[i]
		for r, w := range sh.m {
			w.at -= d
			sh.m[r] = w
		}
	}
	o.newest.Add(-int64(d))
}
