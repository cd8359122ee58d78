package rueidisbackend

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/internal/redistest"
)

// BenchmarkScriptInstructions counts the instructions redis-server spends
// on a call of each group-committed session script, with callgrind, which
// counts the same whatever else the machine is doing: wall-clock measures
// of the server (INFO cpu, INFO commandstats) move by ±5% between identical
// runs on a shared machine, more than a change to a script usually saves.
// It starts its own redis-server under valgrind, loads 5,000 sessions with
// full recent lists and one cart line, and sends batches of 32 calls through
// the Store's batchers (RETAIL_CALLGRIND_BATCH sets another size), counting
// only while they run. Book/UpdateToken and Book/AddToCart count the same
// calls as the book's commands, a batch pipelined in one round trip, on
// sessions of the book's layout: the baseline. It needs valgrind and is
// slow (valgrind runs the server some 50 times slower), so it runs only
// with RETAIL_CALLGRIND=1:
//
//	RETAIL_CALLGRIND=1 go test -run '^$' -bench ScriptInstructions -benchtime 1x ./backend/rueidisbackend/
func BenchmarkScriptInstructions(b *testing.B) {
	if os.Getenv("RETAIL_CALLGRIND") == "" {
		b.Skip("set RETAIL_CALLGRIND=1 to count with callgrind (needs valgrind)")
	}
	for _, tool := range []string{"valgrind", "callgrind_control", "redis-server"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("%s is not installed", tool)
		}
	}
	ctx := context.Background()
	srv, err := redistest.StartServerUnder("valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	pid := strconv.Itoa(srv.Pid())
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, ForceSingleClient: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	st, err := New(c, Options{Prefix: "instr:"})
	if err != nil {
		b.Fatal(err)
	}
	s := st.d
	const sessions, items, rounds = 5000, 1000, 100
	batch := 32 // calls a batch; RETAIL_CALLGRIND_BATCH=1 counts calls sent one by one
	if n, err := strconv.Atoi(os.Getenv("RETAIL_CALLGRIND_BATCH")); err == nil && n > 0 {
		batch = n
	}
	token := func(i int) string { return fmt.Sprintf("%032x", i) }
	user := func(i int) string { return "user-" + strconv.Itoa(i) }
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for i := g; i < sessions; i += 32 {
				for range 26 { // a full recent list
					if err := s.UpdateToken(ctx, token(i), user(i), "item-"+strconv.Itoa(r.IntN(items))); err != nil {
						b.Error(err)
						return
					}
				}
				if _, err := s.AddToCart(ctx, token(i), "item-"+strconv.Itoa(r.IntN(items)), 1); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		return
	}

	r := rand.New(rand.NewPCG(1, 2))
	item := func() string { return "item-" + strconv.Itoa(r.IntN(items)) }
	// view.lua's calls carry what the process read of each session: read
	// once here, before any other call, and kept as the calls change them
	// (so View runs first). They take the sessions in turn, so that no
	// batch holds one twice (the second call would carry what the first
	// changed).
	logins, recents := make([]string, sessions), make([]string, sessions)
	for i := range sessions {
		l, recent, found, err := s.cachedSession(ctx, s.k.session(token(i)))
		if !found || err != nil {
			b.Fatalf("session %d: %v, %v", i, found, err)
		}
		logins[i], recents[i] = l.raw, recent
	}
	nextView := 0
	count := counter(pid, rounds, batch)
	for _, op := range []struct {
		name string
		b    *batcher
		call func(i int) batchCall
	}{
		{"View", s.batches.view, func(int) batchCall {
			i := nextView % sessions
			nextView++
			recent, changed := withItem(recents[i], item(), s.limit)
			if !changed {
				recent = ""
			}
			stamp, now := s.nextStamp()
			c := s.viewCall(now, s.k.session(token(i)), logins[i], recents[i], seenValue(stamp, now), recent)
			if changed {
				recents[i] = recent
			}
			return c
		}},
		{"UpdateToken", s.batches.update, func(i int) batchCall { return s.updateCall(s.k.session(token(i)), token(i), user(i), item(), "") }},
		{"RefreshSession", s.batches.refresh, func(i int) batchCall {
			stamp, now := s.nextStamp()
			return s.sessionCall(now, s.k.session(token(i)), token(i), seenValue(stamp, now), item())
		}},
		{"RefreshSessionNoItem", s.batches.refresh, func(i int) batchCall {
			stamp, now := s.nextStamp()
			return s.sessionCall(now, s.k.session(token(i)), token(i), seenValue(stamp, now), "")
		}},
		{"AddToCart", s.batches.cart, func(i int) batchCall {
			return batchCall{head: s.sessionArgs(s.nowMs(), cartLimits...), keys: []string{s.k.session(token(i))},
				args: []string{item(), strconv.Itoa(1 + r.IntN(3)), "set"}}
		}},
	} {
		b.Run(op.name, func(b *testing.B) {
			send := func(n int) {
				for range n {
					calls := make([]*pending, batch)
					for j := range calls {
						calls[j] = &pending{call: op.call(r.IntN(sessions))}
					}
					replies, err := op.b.run(ctx, calls)
					if err != nil {
						b.Fatal(err)
					}
					for _, m := range replies {
						if n, err := m.AsInt64(); op.name == "View" && (n != 1 || err != nil) {
							b.Fatalf("a view wrote nothing: %d, %v", n, err)
						}
					}
				}
			}
			count(b, send)
		})
	}

	// The baseline: the book's commands for the same calls (peerbench's
	// book-domulti-rueidis), on sessions of the book's layout loaded as
	// above, each batch of calls pipelined in one round trip as the
	// Store's batches are sent in one.
	bk := func(parts ...string) string { return "instr:book:" + strings.Join(parts, ":") }
	bookUpdate := func(i int, it string) rueidis.Commands {
		ts, v := float64(time.Now().UnixNano())/1e9, bk("viewed", token(i))
		return rueidis.Commands{
			c.B().Hset().Key(bk("login")).FieldValue().FieldValue(token(i), user(i)).Build(),
			c.B().Zadd().Key(bk("recent")).ScoreMember().ScoreMember(ts, token(i)).Build(),
			c.B().Zadd().Key(v).ScoreMember().ScoreMember(ts, it).Build(),
			c.B().Zremrangebyrank().Key(v).Start(0).Stop(-26).Build(),
			c.B().Zincrby().Key(bk("viewed")).Increment(-1).Member(it).Build(),
		}
	}
	bookCart := func(i int, it string) rueidis.Commands {
		return rueidis.Commands{c.B().Hset().Key(bk("cart", token(i))).FieldValue().FieldValue(it, strconv.Itoa(1+r.IntN(3))).Build()}
	}
	for i := range sessions {
		var cmds rueidis.Commands
		for range 26 {
			cmds = append(cmds, bookUpdate(i, item())...)
		}
		cmds = append(cmds, bookCart(i, item())...)
		for _, res := range c.DoMulti(ctx, cmds...) {
			if err := res.Error(); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, op := range []struct {
		name string
		cmds func(i int, item string) rueidis.Commands
	}{{"Book/UpdateToken", bookUpdate}, {"Book/AddToCart", bookCart}} {
		b.Run(op.name, func(b *testing.B) {
			count(b, func(n int) {
				for range n {
					var cmds rueidis.Commands
					for range batch {
						cmds = append(cmds, op.cmds(r.IntN(sessions), item())...)
					}
					for _, res := range c.DoMulti(ctx, cmds...) {
						if err := res.Error(); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		})
	}
}

// counter returns count: it sends 5 rounds of calls with send, which
// loads any script, then counts the instructions the server at pid spends
// on rounds*b.N more, and reports them per call (batch calls a round).
func counter(pid string, rounds, batch int) func(b *testing.B, send func(n int)) {
	return func(b *testing.B, send func(n int)) {
		send(5)
		callgrind(b, "-z", pid)
		callgrind(b, "-i", "on", pid)
		send(b.N * rounds)
		total := counted(b, pid)
		callgrind(b, "-i", "off", pid)
		b.ReportMetric(total/float64(b.N*rounds*batch), "instructions/call")
	}
}

// callgrind runs callgrind_control with args.
func callgrind(b *testing.B, args ...string) string {
	out, err := exec.Command("callgrind_control", args...).CombinedOutput()
	if err != nil {
		b.Fatalf("callgrind_control %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// counted returns the instructions callgrind counted in process pid since
// its counters were zeroed: the number on the thread line after "Totals:".
func counted(b *testing.B, pid string) float64 {
	out := callgrind(b, "-e", pid)
	_, after, ok := strings.Cut(out, "Totals:")
	if ok {
		for _, line := range strings.Split(after, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == "Th" {
				if n, err := strconv.ParseFloat(strings.ReplaceAll(f[len(f)-1], ",", ""), 64); err == nil {
					return n
				}
			}
		}
	}
	b.Fatalf("no instruction count in callgrind_control's output:\n%s", out)
	return 0
}
