package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// clusterReadyTimeout bounds the wait for every node to agree the cluster is whole.
	clusterReadyTimeout = 15 * time.Second
	// clusterSlots is the number of hash slots in a Redis Cluster.
	clusterSlots = 16384
)

// Cluster is a running Redis Cluster: one this package started, or the one
// RETAIL_REDIS_CLUSTER_ADDRS names.
type Cluster struct {
	addrs []string
	procs []*process // nil if not owned
}

// StartCluster returns the cluster RETAIL_REDIS_CLUSTER_ADDRS names, after checking that every
// seed reports cluster_state:ok, or starts a private one with that many masters (at least 3, as
// redis-cli --cluster create demands) and no replicas on free loopback ports. It returns once
// every node reports cluster_state:ok, knows every other node, and sees all 16384 slots served,
// so a client may connect through any node. extra is given to every redis-server, after the
// cluster's arguments. The error matches ErrUnavailable when redis-server or redis-cli is not on
// PATH.
func StartCluster(masters int, extra ...string) (*Cluster, error) {
	if env := os.Getenv(envClusterAddrs); strings.TrimSpace(env) != "" {
		return existingCluster(env)
	}
	if masters < 3 {
		return nil, fmt.Errorf("redistest: a cluster needs at least 3 masters, not %d", masters)
	}
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("%w: %s is not on PATH and %s is not set", ErrUnavailable, bin, envClusterAddrs)
		}
	}
	ports, err := pickPorts(masters, true)
	if err != nil {
		return nil, err
	}
	c := &Cluster{procs: make([]*process, masters)}
	errs := make([]error, masters)
	var wg sync.WaitGroup
	for i, port := range ports {
		wg.Go(func() {
			c.procs[i], errs[i] = startOwned(port, true, append([]string{
				"--cluster-enabled", "yes",
				"--cluster-config-file", "{dir}/nodes.conf",
				"--cluster-node-timeout", "5000",
			}, extra...)...)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, err
	}
	for _, p := range c.procs {
		c.addrs = append(c.addrs, p.addr())
	}
	if err := c.create(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.waitReady(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func existingCluster(env string) (*Cluster, error) {
	c := &Cluster{}
	for _, a := range strings.Split(env, ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.addrs = append(c.addrs, a)
		}
	}
	for _, addr := range c.addrs {
		info, err := do(addr, 2*time.Second, "CLUSTER", "INFO")
		if err != nil {
			return nil, fmt.Errorf("redistest: %s=%s: CLUSTER INFO on %s: %w", envClusterAddrs, env, addr, err)
		}
		if state := infoField(info, "cluster_state"); state != "ok" {
			return nil, fmt.Errorf("redistest: %s=%s: %s reports cluster_state:%s, want ok", envClusterAddrs, env, addr, state)
		}
	}
	return c, nil
}

// create forms the cluster with redis-cli --cluster create, the way an operator would. redis-cli
// returns once every node knows every other; waitReady then waits out the rest.
func (c *Cluster) create() error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redistest: redis-cli --cluster create: %w\n%s", err, out)
	}
	return nil
}

// waitReady waits until every node agrees the cluster is whole. A master reports
// cluster_state:ok no sooner than 2 s after it started (Redis's CLUSTER_WRITABLE_DELAY), and
// until then refuses commands with CLUSTERDOWN, so this is where startup spends its time.
func (c *Cluster) waitReady() error {
	n := strconv.Itoa(len(c.addrs))
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_slots_assigned": strconv.Itoa(clusterSlots),
		"cluster_slots_ok":       strconv.Itoa(clusterSlots),
		"cluster_known_nodes":    n,
		"cluster_size":           n,
	}
	deadline := time.Now().Add(clusterReadyTimeout)
	for {
		var problem string
		for _, addr := range c.addrs {
			info, err := do(addr, time.Second, "CLUSTER", "INFO")
			if err != nil {
				problem = fmt.Sprintf("CLUSTER INFO on %s: %v", addr, err)
				break
			}
			for field, v := range want {
				if got := infoField(info, field); got != v {
					problem = fmt.Sprintf("%s reports %s:%s, want %s", addr, field, got, v)
					break
				}
			}
			if problem != "" {
				break
			}
			// A node learns its own address from its peers; until then it hands clients an
			// empty host for itself.
			if self := selfAddr(addr); self != addr {
				problem = fmt.Sprintf("%s reports its own address as %q", addr, self)
				break
			}
		}
		if problem == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster not ready within %v: %s\n%s", clusterReadyTimeout, problem, c.procs[0].logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// selfAddr returns the host:port the node at addr reports for itself in CLUSTER NODES.
func selfAddr(addr string) string {
	nodes, err := do(addr, time.Second, "CLUSTER", "NODES")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && strings.Contains(f[2], "myself") {
			hostPort, _, _ := strings.Cut(f[1], "@") // 127.0.0.1:7000@17000[,hostname]
			return hostPort
		}
	}
	return ""
}

// Addrs returns the host:port of every node (of every seed, for a cluster this package did not
// start). The slice is a copy.
func (c *Cluster) Addrs() []string { return append([]string(nil), c.addrs...) }

// Kill stops node i (in the order of Addrs) of a cluster this package started at once, with
// SIGKILL, as a crash would: what it held in memory is lost. Restart brings it back.
func (c *Cluster) Kill(i int) error {
	if c.procs == nil || i < 0 || i >= len(c.procs) {
		return fmt.Errorf("redistest: Kill(%d): no such node of an owned cluster", i)
	}
	c.procs[i].kill()
	return nil
}

// Restart starts node i, stopped by Kill, again on its port with its cluster configuration, so
// that it rejoins the cluster holding the same slots (and no keys), and waits until it answers.
func (c *Cluster) Restart(i int) error {
	if c.procs == nil || i < 0 || i >= len(c.procs) {
		return fmt.Errorf("redistest: Restart(%d): no such node of an owned cluster", i)
	}
	return c.procs[i].restart()
}

// Owned reports whether this package started the cluster, so tests may FLUSHALL its nodes.
func (c *Cluster) Owned() bool { return c.procs != nil }

// Close stops every node and removes their temporary directories if the cluster is owned; it
// leaves other clusters running. It is safe to call more than once.
func (c *Cluster) Close() error {
	errs := make([]error, len(c.procs))
	var wg sync.WaitGroup
	for i, p := range c.procs {
		if p == nil {
			continue
		}
		wg.Go(func() { errs[i] = p.close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
