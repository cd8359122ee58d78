package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
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
	addrs    []string
	procs    []*process // nil if not owned
	masters  int        // masters asked for, if owned
	replicas int        // replicas of each master, if owned
	extra    []string   // the servers' extra arguments, for AddMaster
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
	return startCluster(masters, 0, extra)
}

// StartReplicatedCluster starts a private cluster of masters masters, each with replicas
// replicas, as StartCluster does, so that a test may kill a master and watch its replica take
// over. It never uses RETAIL_REDIS_CLUSTER_ADDRS: such tests kill nodes. It returns once every
// replica's link to its master is up, so a failover may promote any of them. Which nodes are
// masters is Redis's choice: see Masters.
func StartReplicatedCluster(masters, replicas int, extra ...string) (*Cluster, error) {
	if replicas < 1 {
		return nil, fmt.Errorf("redistest: a replicated cluster needs at least 1 replica a master, not %d", replicas)
	}
	return startCluster(masters, replicas, extra)
}

func startCluster(masters, replicas int, extra []string) (*Cluster, error) {
	if masters < 3 {
		return nil, fmt.Errorf("redistest: a cluster needs at least 3 masters, not %d", masters)
	}
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("%w: %s is not on PATH and %s is not set", ErrUnavailable, bin, envClusterAddrs)
		}
	}
	nodes := masters * (1 + replicas)
	ports, err := pickPorts(nodes, true)
	if err != nil {
		return nil, err
	}
	c := &Cluster{procs: make([]*process, nodes), masters: masters, replicas: replicas}
	errs := make([]error, nodes)
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
	args = append(args, "--cluster-replicas", strconv.Itoa(c.replicas), "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redistest: redis-cli --cluster create: %w\n%s", err, out)
	}
	return nil
}

// waitReady waits until every node agrees the cluster is whole. A master reports
// cluster_state:ok no sooner than 2 s after it started (Redis's CLUSTER_WRITABLE_DELAY), and
// until then refuses commands with CLUSTERDOWN, so this is where startup spends its time.
func (c *Cluster) waitReady() error {
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_slots_assigned": strconv.Itoa(clusterSlots),
		"cluster_slots_ok":       strconv.Itoa(clusterSlots),
		"cluster_known_nodes":    strconv.Itoa(len(c.addrs)),
		"cluster_size":           strconv.Itoa(c.masters),
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
			if c.replicas > 0 {
				repl, err := do(addr, time.Second, "INFO", "replication")
				if err != nil {
					problem = fmt.Sprintf("INFO replication on %s: %v", addr, err)
					break
				}
				if infoField(repl, "role") == "slave" && infoField(repl, "master_link_status") != "up" {
					problem = fmt.Sprintf("replica %s reports master_link_status:%s", addr, infoField(repl, "master_link_status"))
					break
				}
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

// Masters returns the indexes (in the order of Addrs) of the nodes that are masters now, as the
// first live node that answers CLUSTER NODES sees them.
func (c *Cluster) Masters() ([]int, error) {
	var lastErr error
	for _, addr := range c.addrs {
		nodes, err := do(addr, time.Second, "CLUSTER", "NODES")
		if err != nil {
			lastErr = err
			continue
		}
		var masters []int
		for _, line := range strings.Split(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) < 3 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
				continue
			}
			hostPort, _, _ := strings.Cut(f[1], "@")
			for i, a := range c.addrs {
				if a == hostPort {
					masters = append(masters, i)
				}
			}
		}
		return masters, nil
	}
	return nil, fmt.Errorf("redistest: no node answers CLUSTER NODES: %w", lastErr)
}

// WaitHealthy waits, up to timeout, until every node but those in down reports
// cluster_state:ok with all 16384 slots served and sees each node in down as failed: after a
// Kill, until a replica has taken over the dead master's slots and every live node knows it.
func (c *Cluster) WaitHealthy(timeout time.Duration, down ...int) error {
	deadline := time.Now().Add(timeout)
	for {
		problem := ""
		for i, addr := range c.addrs {
			if slices.Contains(down, i) {
				continue
			}
			info, err := do(addr, time.Second, "CLUSTER", "INFO")
			if err != nil {
				problem = fmt.Sprintf("CLUSTER INFO on %s: %v", addr, err)
				break
			}
			if st, ok := infoField(info, "cluster_state"), infoField(info, "cluster_slots_ok"); st != "ok" || ok != strconv.Itoa(clusterSlots) {
				problem = fmt.Sprintf("%s reports cluster_state:%s, cluster_slots_ok:%s", addr, st, ok)
				break
			}
			nodes, err := do(addr, time.Second, "CLUSTER", "NODES")
			if err != nil {
				problem = fmt.Sprintf("CLUSTER NODES on %s: %v", addr, err)
				break
			}
			for _, line := range strings.Split(nodes, "\n") {
				f := strings.Fields(line)
				if len(f) < 3 {
					continue
				}
				hostPort, _, _ := strings.Cut(f[1], "@")
				for _, d := range down {
					if hostPort == c.addrs[d] && !slices.Contains(strings.Split(f[2], ","), "fail") {
						problem = fmt.Sprintf("%s sees %s as %s, not failed", addr, hostPort, f[2])
					}
				}
			}
			if problem != "" {
				break
			}
		}
		if problem == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster not healthy within %v: %s", timeout, problem)
		}
		time.Sleep(50 * time.Millisecond)
	}
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
