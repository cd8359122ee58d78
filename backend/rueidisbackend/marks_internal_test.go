package rueidisbackend

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/rueidis"
)

// TestMarkTable_AReadBegunBeforeAChangeIsNotStored: a mark read before
// the table heard that it changed, or before tracking started or stopped,
// may be the old one, and is not stored; one read after is.
func TestMarkTable_AReadBegunBeforeAChangeIsNotStored(t *testing.T) {
	tb := &tracker{prefix: "p:logoutmark:{", ttl: time.Minute}
	for _, change := range []struct {
		name string
		do   func()
	}{
		{"its invalidation", func() { tb.forgetKey("p:logoutmark:{3}") }},
		{"this process's raise", func() { (&store{tracker: tb}).markWritten(3) }},
		{"a flush", func() { tb.invalidated(nil) }},
		{"tracking stopping", func() { tb.setConn(nil, 0, nil) }},
	} {
		r := markRead{gen: tb.gens[3]}
		change.do()
		tb.putMark(3, r, 5)
		if _, ok := tb.mark(3); ok {
			t.Errorf("%s: a mark read before it was stored", change.name)
		}
		tb.putMark(3, markRead{gen: tb.gens[3]}, 5)
		if at, ok := tb.mark(3); !ok || at != 5 {
			t.Errorf("%s: get after a read that began after it = %d, %v; want 5, true", change.name, at, ok)
		}
		change.do()
		if _, ok := tb.mark(3); ok {
			t.Errorf("%s: the mark is still served after it", change.name)
		}
	}
}

// fakeConn is a tracking connection over c; midway, if set, runs once the
// server has answered a read, before the reply is returned: a change heard
// while the read was on its way, so that the reply is the value from
// before it.
type fakeConn struct {
	rueidis.DedicatedClient
	c      rueidis.Client
	midway func()
}

func (f fakeConn) B() rueidis.Builder { return f.c.B() }

func (f fakeConn) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	r := f.c.Do(ctx, cmd)
	if f.midway != nil {
		f.midway()
	}
	return r
}

// miniredisServer starts a miniredis and returns it and a client of it.
func miniredisServer(t *testing.T) (*miniredis.Miniredis, rueidis.Client) {
	mr := miniredis.RunT(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{mr.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return mr, c
}

// TestMarkTable_AReadTheServerChangedUnderIsNotStored: read takes the
// mark's count of changes before it sends its GET, so a change heard
// while the GET is on its way keeps the old value out of the table.
func TestMarkTable_AReadTheServerChangedUnderIsNotStored(t *testing.T) {
	mr, c := miniredisServer(t)
	tb := &tracker{prefix: "p:logoutmark:{", ttl: time.Minute}
	mr.Set(tb.key(3), "5")
	tb.setConn(fakeConn{c: c, midway: func() { tb.forgetKey(tb.key(3)) }}, 1, nil)
	if at, ok := tb.readMark(context.Background(), 3); !ok || at != 5 {
		t.Fatalf("read = %d, %v; want 5, true", at, ok)
	}
	if _, ok := tb.mark(3); ok {
		t.Fatal("a mark whose change was heard during its read was stored")
	}
	tb.setConn(fakeConn{c: c}, 1, nil)
	if at, ok := tb.readMark(context.Background(), 3); !ok || at != 5 {
		t.Fatalf("read = %d, %v; want 5, true", at, ok)
	}
	if at, ok := tb.mark(3); !ok || at != 5 {
		t.Fatalf("get after an undisturbed read = %d, %v; want 5, true", at, ok)
	}
}

// redirectingConn is a tracking connection over c whose reads the server
// sends elsewhere, as a Valkey replica does (REDIRECT).
type redirectingConn struct{ fakeConn }

func (f redirectingConn) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	return f.c.Do(ctx, f.c.B().Arbitrary("REDIRECTME").Build())
}

// TestMarkTable_ARefusedReadRedials: a tracking connection whose reads the
// server sends elsewhere (a replica that redirects them, say) is given up,
// so that the calls do not all pay for a read that fails; any other error
// (a key of the wrong type here, BUSY, say) fails only its read.
func TestMarkTable_ARefusedReadRedials(t *testing.T) {
	mr, c := miniredisServer(t)
	if err := mr.Server().Register("REDIRECTME", func(p *server.Peer, _ string, _ []string) {
		p.WriteError("REDIRECT 127.0.0.1:1")
	}); err != nil {
		t.Fatal(err)
	}
	tb := &tracker{prefix: "p:logoutmark:{", sessions: newSessionTable("p:session:{", DefaultSessionTableBytes), ttl: time.Minute}
	refused := make(chan struct{}, 1)
	told := func() bool {
		select {
		case <-refused:
			return true
		default:
			return false
		}
	}
	mr.HSet(tb.key(3), "not", "a string") // GET answers WRONGTYPE
	mr.Set("p:session:{s}", "not a hash") // HMGET answers WRONGTYPE
	tb.setConn(fakeConn{c: c}, 1, refused)
	if _, ok := tb.readMark(context.Background(), 3); ok {
		t.Fatal("a read that failed answered")
	}
	if _, _, ok, _ := tb.readSession(context.Background(), "p:session:{s}", recordOf("p:session:{s}")); ok {
		t.Fatal("a session read that failed answered")
	}
	if told() {
		t.Fatal("a key of the wrong type was told to the tracker as a refusal")
	}
	tb.setConn(redirectingConn{fakeConn{c: c}}, 1, refused)
	if _, ok := tb.readMark(context.Background(), 4); ok || !told() {
		t.Fatal("a redirected mark read answered, or was not told to the tracker")
	}
	if _, _, ok, _ := tb.readSession(context.Background(), "p:session:{t}", recordOf("p:session:{t}")); ok || !told() {
		t.Fatal("a redirected session read answered, or was not told to the tracker")
	}
	tb.setConn(fakeConn{c: c}, 1, refused)
	mr.Set(tb.key(4), "9")
	if at, ok := tb.readMark(context.Background(), 4); !ok || at != 9 || told() {
		t.Fatalf("read = %d, %v; want 9, true, and nothing told", at, ok)
	}
}

// TestMarkTable_InvalidationsNameMarks: an invalidation drops the marks
// its keys name, and only those; the probe's is told apart.
func TestMarkTable_InvalidationsNameMarks(t *testing.T) {
	tb := &tracker{prefix: "p:logoutmark:{", probe: "p:logoutprobe:{x}", ttl: time.Minute}
	for b := range 8 {
		tb.putMark(b, markRead{}, int64(b))
	}
	for _, key := range []string{"p:logoutmark:{2}", "p:logoutmark:{x}", "q:logoutmark:{3}", "p:logoutmark:{5}",
		"p:logoutmark:{99999}", "p:logoutmark:{-1}", "p:logoutprobe:{y}"} {
		if tb.forgetKey(key) {
			t.Errorf("%s taken for the probe", key)
		}
	}
	for b := range 8 {
		if _, ok := tb.mark(b); ok == (b == 2 || b == 5) {
			t.Errorf("mark %d held: %v after the invalidation", b, ok)
		}
	}
	if !tb.forgetKey(tb.probe) {
		t.Fatal("the probe's invalidation was not told apart")
	}
}

// TestMarkTable_AMarkLastsTheTTL: a mark no invalidation dropped is served
// for the TTL at most, as a value in the client-side cache is.
func TestMarkTable_AMarkLastsTheTTL(t *testing.T) {
	tb := &tracker{prefix: "p:logoutmark:{", ttl: time.Millisecond}
	tb.putMark(1, markRead{}, 7)
	time.Sleep(5 * time.Millisecond)
	if _, ok := tb.mark(1); ok {
		t.Fatal("a mark served past its TTL")
	}
}
