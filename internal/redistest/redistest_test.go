package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startServer starts a private server, ignoring RETAIL_REDIS_ADDR, or skips the test.
func startServer(t *testing.T) *Server {
	t.Helper()
	t.Setenv(envAddr, "")
	s, err := StartServer()
	if errors.Is(err, ErrUnavailable) {
		Skip(t, err.Error())
	}
	if err != nil {
		t.Fatalf("StartServer() = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// requirePong fails unless addr answers PING.
func requirePong(t *testing.T, addr string) {
	t.Helper()
	if reply, err := do(addr, time.Second, "PING"); err != nil || reply != "PONG" {
		t.Fatalf("PING %s = %q, %v, want PONG", addr, reply, err)
	}
}

// requireStopped fails unless nothing accepts connections at addr any more.
func requireStopped(t *testing.T, addr string) {
	t.Helper()
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("dial %s after Close succeeded, want connection refused", addr)
	}
}

// TestStartServerUnder_RunsTheServerUnderTheCommand starts redis-server as
// the argument of env, which runs it in its own process as valgrind does,
// even with RETAIL_REDIS_ADDR set: the server answers, Pid is the
// process that answers INFO, and Close stops it.
func TestStartServerUnder_RunsTheServerUnderTheCommand(t *testing.T) {
	t.Setenv(envAddr, "127.0.0.1:1")
	s, err := StartServerUnder("env", "RETAIL_UNDER=1")
	if errors.Is(err, ErrUnavailable) {
		Skip(t, err.Error())
	}
	if err != nil {
		t.Fatalf("StartServerUnder(env) = %v", err)
	}
	defer s.Close()
	requirePong(t, s.Addr())
	info, err := do(s.Addr(), time.Second, "INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	if pid := infoField(info, "process_id"); pid != strconv.Itoa(s.Pid()) || s.Pid() == 0 {
		t.Errorf("Pid() = %d, INFO process_id = %s", s.Pid(), pid)
	}
	if args := s.proc.cmd.Args; len(args) < 3 || args[0] != "env" || args[1] != "RETAIL_UNDER=1" || !strings.HasSuffix(args[2], "redis-server") {
		t.Errorf("command = %q, want env RETAIL_UNDER=1 .../redis-server ...", args)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	requireStopped(t, s.Addr())
	if _, err := StartServerUnder(); err == nil {
		t.Error("StartServerUnder() with no command succeeded")
	}
}

func TestStartServer_AnswersAndStopsOnClose(t *testing.T) {
	s := startServer(t)
	if !s.Owned() {
		t.Fatal("Owned() = false for a server StartServer started, want true")
	}
	requirePong(t, s.Addr())
	dir := s.proc.dir
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	requireStopped(t, s.Addr())
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("stat %s after Close = %v, want not exist", dir, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
}

// TestServer_RestartComesBackEmptyOnTheSamePort writes a key, restarts the
// server, and checks that it answers on the same address without the key.
func TestServer_RestartComesBackEmptyOnTheSamePort(t *testing.T) {
	s := startServer(t)
	if reply, err := do(s.Addr(), time.Second, "SET", "k", "v"); err != nil || reply != "OK" {
		t.Fatalf("SET = %q, %v", reply, err)
	}
	pid := s.Pid()
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart() = %v", err)
	}
	requirePong(t, s.Addr())
	if s.Pid() == pid {
		t.Errorf("Pid() = %d after Restart, the killed server's", pid)
	}
	if reply, err := do(s.Addr(), time.Second, "EXISTS", "k"); err != nil || reply != "0" {
		t.Errorf("EXISTS k after Restart = %q, %v; want 0", reply, err)
	}
	if err := (&Server{addr: s.Addr()}).Restart(); err == nil {
		t.Error("Restart of a server the package did not start = nil, want an error")
	}
}

func TestStartServer_UsesServerFromEnv(t *testing.T) {
	own := startServer(t)
	t.Setenv(envAddr, own.Addr())
	s, err := StartServer()
	if err != nil {
		t.Fatalf("StartServer() with %s=%s = %v", envAddr, own.Addr(), err)
	}
	if s.Addr() != own.Addr() || s.Owned() {
		t.Errorf("StartServer() = %s, owned %v, want %s, owned false", s.Addr(), s.Owned(), own.Addr())
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	requirePong(t, own.Addr()) // Close left the server it does not own running.
}

func TestStartServer_FailsWhenEnvServerUnreachable(t *testing.T) {
	ports, err := pickPorts(1, false)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	t.Setenv(envAddr, addr)
	_, err = StartServer()
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("StartServer() with %s=%s = %v, want a failure other than ErrUnavailable", envAddr, addr, err)
	}
}

func TestStart_UnavailableWithoutPrograms(t *testing.T) {
	t.Setenv(envAddr, "")
	t.Setenv(envClusterAddrs, "")
	t.Setenv("PATH", t.TempDir())
	if _, err := StartServer(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("StartServer() with empty PATH = %v, want ErrUnavailable", err)
	}
	if _, err := StartCluster(3); !errors.Is(err, ErrUnavailable) {
		t.Errorf("StartCluster(3) with empty PATH = %v, want ErrUnavailable", err)
	}
}

func TestStartCluster_ThreeMastersCoverAllSlotsAndStopOnClose(t *testing.T) {
	t.Setenv(envClusterAddrs, "")
	begin := time.Now()
	c, err := StartCluster(3)
	if errors.Is(err, ErrUnavailable) {
		Skip(t, err.Error())
	}
	if err != nil {
		t.Fatalf("StartCluster(3) = %v", err)
	}
	t.Logf("StartCluster(3) took %v", time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() { c.Close() })

	if !c.Owned() || len(c.Addrs()) != 3 {
		t.Fatalf("StartCluster(3) = %v, owned %v, want 3 owned nodes", c.Addrs(), c.Owned())
	}
	for _, addr := range c.Addrs() {
		requirePong(t, addr)
		info, err := do(addr, time.Second, "CLUSTER", "INFO")
		if err != nil {
			t.Fatalf("CLUSTER INFO on %s = %v", addr, err)
		}
		for field, want := range map[string]string{
			"cluster_state":    "ok",
			"cluster_slots_ok": "16384",
			"cluster_size":     "3",
		} {
			if got := infoField(info, field); got != want {
				t.Errorf("CLUSTER INFO on %s: %s = %q, want %q", addr, field, got, want)
			}
		}
		nodes, err := do(addr, time.Second, "CLUSTER", "NODES")
		if err != nil {
			t.Fatalf("CLUSTER NODES on %s = %v", addr, err)
		}
		if got := strings.Count(nodes, "master"); got != 3 {
			t.Errorf("CLUSTER NODES on %s lists %d masters, want 3:\n%s", addr, got, nodes)
		}
	}

	t.Run("UsesClusterFromEnv", func(t *testing.T) {
		t.Setenv(envClusterAddrs, strings.Join(c.Addrs(), ", "))
		seen, err := StartCluster(3)
		if err != nil {
			t.Fatalf("StartCluster(3) with %s set = %v", envClusterAddrs, err)
		}
		if !slices.Equal(seen.Addrs(), c.Addrs()) || seen.Owned() {
			t.Errorf("StartCluster(3) = %v, owned %v, want %v, owned false", seen.Addrs(), seen.Owned(), c.Addrs())
		}
		if err := seen.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
		requirePong(t, c.Addrs()[0])
	})

	if err := c.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	for _, addr := range c.Addrs() {
		requireStopped(t, addr)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
}

func TestStartCluster_RefusesFewerThanThreeMasters(t *testing.T) {
	t.Setenv(envClusterAddrs, "")
	if c, err := StartCluster(2); err == nil {
		c.Close()
		t.Error("StartCluster(2) = nil error, want a refusal")
	}
}

// TestStartServer_DiesWithTestBinary runs this test binary as a child that starts a server, prints
// its address and exits without Close; the server must not outlive it.
func TestStartServer_DiesWithTestBinary(t *testing.T) {
	if os.Getenv("REDISTEST_HELPER") == "1" {
		s, err := StartServer()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(s.Addr(), s.proc.dir)
		os.Exit(0)
	}
	if runtime.GOOS != "linux" {
		t.Skip("only Linux has a parent-death signal")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		Skip(t, "redis-server is not on PATH")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStartServer_DiesWithTestBinary$")
	// Under -race the child would otherwise sleep a second before exiting.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), "REDISTEST_HELPER=1", envAddr+"=", "GORACE="+gorace)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 || !strings.Contains(fields[1], "redistest-") {
		t.Fatalf("helper printed %q, want ADDR DIR", out)
	}
	addr, dir := fields[0], fields[1]
	t.Cleanup(func() { os.RemoveAll(dir) })
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatalf("server %s still accepts connections 5s after its test binary exited", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeTB records Skip and Fatal instead of stopping the test.
type fakeTB struct {
	testing.TB
	skipped, fatal string
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Skip(args ...any)  { f.skipped = fmt.Sprint(args...) }
func (f *fakeTB) Fatal(args ...any) { f.fatal = fmt.Sprint(args...) }

func TestSkip_SkipsUnlessRequired(t *testing.T) {
	t.Setenv(envRequire, "")
	freshSkips(t)
	var f fakeTB
	Skip(&f, "no redis")
	if f.skipped != "no redis" || f.fatal != "" {
		t.Errorf("Skip(no redis) skipped %q, failed %q, want skipped %q", f.skipped, f.fatal, "no redis")
	}
}

func TestSkip_FailsWhenRequired(t *testing.T) {
	t.Setenv(envRequire, "1")
	var f fakeTB
	Skip(&f, "no redis")
	if want := "no redis (RETAIL_REQUIRE_REDIS=1)"; f.fatal != want || f.skipped != "" {
		t.Errorf("Skip(no redis) failed %q, skipped %q, want failed %q", f.fatal, f.skipped, want)
	}
}

// TestStartServer_MovesOnWhenPortTaken covers the race pickPorts leaves open: another program, or
// another Redis, binds the port before our server does.
func TestStartServer_MovesOnWhenPortTaken(t *testing.T) {
	other := startServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for name, port := range map[string]int{
		"Listener": l.Addr().(*net.TCPAddr).Port,
		"Redis":    other.proc.port,
	} {
		t.Run(name, func(t *testing.T) {
			p, err := startOwned(port, false)
			if err != nil {
				t.Fatalf("startOwned(%d) = %v", port, err)
			}
			defer p.close()
			if p.port == port {
				t.Errorf("startOwned(%d) kept the taken port", port)
			}
			requirePong(t, p.addr())
		})
	}
	requirePong(t, other.Addr())
}

// freshSkips empties the skip count for t, and restores it after, so that
// a test of the count neither sees nor leaves skips of its own.
func freshSkips(t *testing.T) {
	skips.Lock()
	saved := skips.n
	savedReasons := skips.reasons
	skips.n, skips.reasons = 0, nil
	skips.Unlock()
	t.Cleanup(func() {
		skips.Lock()
		skips.n, skips.reasons = saved, savedReasons
		skips.Unlock()
	})
}

func TestSkipSummary_CountsSkipsAndNamesReasons(t *testing.T) {
	freshSkips(t)
	if got := skipSummary(); got != "" {
		t.Fatalf("skipSummary() with no skips = %q, want \"\"", got)
	}
	for _, reason := range []string{"no server", "no cluster", "no server"} {
		noteSkip(reason) // what Skip counts before it skips
	}
	got := skipSummary()
	for _, want := range []string{"skipped 3 tests that need Redis", "(no server; no cluster)"} {
		if !strings.Contains(got, want) {
			t.Errorf("skipSummary() = %q, want it to contain %q", got, want)
		}
	}
}

func TestServer_CommandCallsCountsWhatRan(t *testing.T) {
	s := startServer(t)
	before, err := s.CommandCalls()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := do(s.Addr(), time.Second, "SET", "k", "v"); err != nil {
			t.Fatal(err)
		}
	}
	after, err := s.CommandCalls()
	if err != nil {
		t.Fatal(err)
	}
	if n := after - before - 1; n != 5 {
		t.Errorf("CommandCalls() moved by %d (less the first INFO) over 5 SETs, want 5", n)
	}
}
