package rueidisbackend

import (
	"testing"
	"time"
)

// TestMarkTable_AReadBegunBeforeAChangeIsNotStored: a mark read before
// the table heard that it changed, or before tracking started or stopped,
// may be the old one, and is not stored; one read after is.
func TestMarkTable_AReadBegunBeforeAChangeIsNotStored(t *testing.T) {
	tb := &markTable{prefix: "p:logoutmark:{", ttl: time.Minute}
	for _, change := range []struct {
		name string
		do   func()
	}{
		{"its invalidation", func() { tb.forgetKey("p:logoutmark:{3}") }},
		{"this process's raise", func() { (&store{marks: tb}).markWritten(3) }},
		{"a flush", func() { tb.invalidated(nil) }},
		{"tracking stopping", func() { tb.setConn(nil, 0) }},
	} {
		r := markRead{gen: tb.gens[3], epoch: tb.epoch}
		change.do()
		tb.put(3, r, 5)
		if _, ok := tb.get(3); ok {
			t.Errorf("%s: a mark read before it was stored", change.name)
		}
		r = markRead{gen: tb.gens[3], epoch: tb.epoch}
		tb.put(3, r, 5)
		if at, ok := tb.get(3); !ok || at != 5 {
			t.Errorf("%s: get after a read that began after it = %d, %v; want 5, true", change.name, at, ok)
		}
		change.do()
		if _, ok := tb.get(3); ok {
			t.Errorf("%s: the mark is still served after it", change.name)
		}
	}
}

// TestMarkTable_InvalidationsNameMarks: an invalidation drops the marks
// its keys name, and only those.
func TestMarkTable_InvalidationsNameMarks(t *testing.T) {
	tb := &markTable{prefix: "p:logoutmark:{", ttl: time.Minute}
	for b := range 8 {
		tb.put(b, markRead{}, int64(b))
	}
	for _, key := range []string{"p:logoutmark:{2}", "p:logoutmark:{x}", "q:logoutmark:{3}", "p:logoutmark:{5}", "p:logoutmark:{99999}", "p:logoutmark:{-1}"} {
		tb.forgetKey(key)
	}
	for b := range 8 {
		if _, ok := tb.get(b); ok == (b == 2 || b == 5) {
			t.Errorf("mark %d held: %v after the invalidation", b, ok)
		}
	}
}

// TestMarkTable_AMarkLastsTheTTL: a mark no invalidation dropped is served
// for the TTL at most, as a value in the client-side cache is.
func TestMarkTable_AMarkLastsTheTTL(t *testing.T) {
	tb := &markTable{prefix: "p:logoutmark:{", ttl: time.Millisecond}
	tb.put(1, markRead{}, 7)
	time.Sleep(5 * time.Millisecond)
	if _, ok := tb.get(1); ok {
		t.Fatal("a mark served past its TTL")
	}
}
