package rueidisbackend

import (
	"testing"

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
