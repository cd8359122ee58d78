package main

// The private servers every run measures on: one redis-server, or a Redis
// Cluster of n masters, each on a free loopback port (never 6379) in a
// temporary directory, without persistence, stopped at the end.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// errNoRedis means redis-server is not on PATH; the test skips on it.
var errNoRedis = errors.New("redis-server is not on PATH")

// servers is a running standalone server (one address) or cluster (one
// address a master).
type servers struct {
	addrs   []string
	cluster bool
	procs   []*exec.Cmd
	dirs    []string
	stopped sync.Once
}

// startRedis starts one redis-server if masters is 0, else a cluster of
// that many masters without replicas, and waits until it serves.
func startRedis(masters int) (*servers, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errNoRedis
	}
	s := &servers{cluster: masters > 0}
	for range max(masters, 1) {
		if err := s.startOne(bin); err != nil {
			s.stop()
			return nil, err
		}
	}
	if s.cluster {
		if err := s.formCluster(); err != nil {
			s.stop()
			return nil, err
		}
	}
	return s, nil
}

// startOne starts a server on a free port, trying another port if a
// process took the one picked before the server bound it.
func (s *servers) startOne(bin string) error {
	var last error
	for range 4 {
		port, err := freePort(s.cluster)
		if err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "retail-bench-")
		if err != nil {
			return err
		}
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}
		if s.cluster {
			args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
		}
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			os.RemoveAll(dir)
			return err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if last = waitPing(addr, cmd); last == nil {
			s.addrs, s.procs, s.dirs = append(s.addrs, addr), append(s.procs, cmd), append(s.dirs, dir)
			return nil
		}
		stopProc(cmd)
		log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		os.RemoveAll(dir)
		last = fmt.Errorf("redis-server on %s: %v\n%s", addr, last, log)
	}
	return last
}

// freePort returns a loopback port that was free a moment ago, not 6379,
// and for a cluster node one whose bus port (+10000) was free too.
func freePort(bus bool) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		ok := port != 6379
		if ok && bus {
			bl, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
			if ok = err == nil; ok {
				bl.Close()
			}
		}
		l.Close()
		if ok {
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port")
}

// waitPing waits until addr answers PING from the process cmd started.
func waitPing(addr string, cmd *exec.Cmd) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c.Ping(ctx).Err() != nil {
			continue
		}
		// Something else may have taken the port first: check who answers.
		info, err := c.Info(ctx, "server").Result()
		if err == nil && infoField(info, "process_id") == strconv.Itoa(cmd.Process.Pid) {
			return nil
		}
		return errors.New("another process answers on the port")
	}
	return errors.New("no PONG within 10s")
}

// formCluster assigns each master an equal share of the slots, as
// redis-cli --cluster create does, introduces them to each other and waits
// until every node sees the whole cluster.
func (s *servers) formCluster() error {
	ctx := context.Background()
	n := len(s.addrs)
	for i, addr := range s.addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		lo, hi := i*16384/n, (i+1)*16384/n-1
		err := c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err()
		if err == nil {
			err = c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err()
		}
		for _, other := range s.addrs[:i] {
			if err == nil {
				host, port, _ := net.SplitHostPort(other)
				err = c.Do(ctx, "CLUSTER", "MEET", host, port).Err()
			}
		}
		c.Close()
		if err != nil {
			return fmt.Errorf("forming the cluster on %s: %w", addr, err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ready := true
		for _, addr := range s.addrs {
			c := redis.NewClient(&redis.Options{Addr: addr})
			info, err := c.ClusterInfo(ctx).Result()
			c.Close()
			ready = ready && err == nil && infoField(info, "cluster_state") == "ok" &&
				infoField(info, "cluster_known_nodes") == strconv.Itoa(n) && infoField(info, "cluster_slots_ok") == "16384"
		}
		if ready {
			return nil
		}
	}
	return errors.New("the cluster did not become ready within 30s")
}

// stop stops every server (SIGTERM, then SIGKILL after 5s) and removes
// their directories. It is safe to call more than once, and concurrently.
func (s *servers) stop() {
	s.stopped.Do(func() {
		for _, cmd := range s.procs {
			stopProc(cmd)
		}
		for _, dir := range s.dirs {
			os.RemoveAll(dir)
		}
	})
}

func stopProc(cmd *exec.Cmd) {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// String names the servers for the report.
func (s *servers) String() string {
	if s.cluster {
		return fmt.Sprintf("Redis Cluster of %d master(s) (%s)", len(s.addrs), strings.Join(s.addrs, ","))
	}
	return "redis-server " + s.addrs[0]
}

// cpu returns each server's CPU seconds so far (INFO cpu: user + sys), by
// address; the difference of two readings over a number of calls is the
// server's time a call.
func (s *servers) cpu(ctx context.Context) (map[string]float64, error) {
	m := map[string]float64{}
	for _, addr := range s.addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		info, err := c.Info(ctx, "cpu").Result()
		c.Close()
		if err != nil {
			return nil, err
		}
		for _, k := range []string{"used_cpu_user", "used_cpu_sys"} {
			v, err := strconv.ParseFloat(infoField(info, k), 64)
			if err != nil {
				return nil, fmt.Errorf("INFO cpu %s: %w", k, err)
			}
			m[addr] += v
		}
	}
	return m, nil
}

// version is the servers' redis_version.
func (s *servers) version(ctx context.Context) string {
	c := redis.NewClient(&redis.Options{Addr: s.addrs[0]})
	defer c.Close()
	info, _ := c.Info(ctx, "server").Result()
	return infoField(info, "redis_version")
}

// infoField returns the value of field in an INFO reply.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
