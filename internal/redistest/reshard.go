package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"time"
)

// StartPrivateCluster starts a private cluster of masters masters without replicas, as
// StartCluster does, but never uses RETAIL_REDIS_CLUSTER_ADDRS: tests that add masters or move
// slots change the cluster's shape.
func StartPrivateCluster(masters int, extra ...string) (*Cluster, error) {
	c, err := startCluster(masters, 0, extra)
	if c != nil {
		c.extra = extra
	}
	return c, err
}

// AddMaster starts a new redis-server (with the cluster's extra arguments) and joins it to a
// cluster this package started, as an empty master, with redis-cli --cluster add-node, the way
// an operator would. It returns once every node knows every other and agrees the cluster is ok.
// Its address is appended to Addrs; Close stops it.
func (c *Cluster) AddMaster() (string, error) {
	if c.procs == nil {
		return "", fmt.Errorf("redistest: AddMaster on a cluster this package did not start")
	}
	ports, err := pickPorts(1, true)
	if err != nil {
		return "", err
	}
	p, err := startOwned(ports[0], true, append([]string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "{dir}/nodes.conf",
		"--cluster-node-timeout", "5000",
	}, c.extra...)...)
	if err != nil {
		return "", err
	}
	c.procs = append(c.procs, p)
	c.addrs = append(c.addrs, p.addr())
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "redis-cli", "--cluster", "add-node", p.addr(), c.addrs[0]).CombinedOutput(); err != nil {
		return "", fmt.Errorf("redistest: redis-cli --cluster add-node: %w\n%s", err, out)
	}
	return p.addr(), c.WaitAgreed(clusterReadyTimeout)
}

// WaitAgreed waits, up to timeout, until every node reports cluster_state:ok, knows every node,
// and reports the same configuration epoch view of the slots (as redis-cli --cluster check
// demands before it moves slots).
func (c *Cluster) WaitAgreed(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		problem := ""
		for _, addr := range c.addrs {
			info, err := do(addr, time.Second, "CLUSTER", "INFO")
			if err != nil {
				problem = fmt.Sprintf("CLUSTER INFO on %s: %v", addr, err)
				break
			}
			if st, n := infoField(info, "cluster_state"), infoField(info, "cluster_known_nodes"); st != "ok" || n != strconv.Itoa(len(c.addrs)) {
				problem = fmt.Sprintf("%s reports cluster_state:%s, cluster_known_nodes:%s", addr, st, n)
				break
			}
			if self := selfAddr(addr); self != addr {
				problem = fmt.Sprintf("%s reports its own address as %q", addr, self)
				break
			}
		}
		if problem == "" {
			if out, err := exec.Command("redis-cli", "--cluster", "check", c.addrs[0]).CombinedOutput(); err != nil {
				problem = fmt.Sprintf("redis-cli --cluster check %s: %v\n%s", c.addrs[0], err, out)
			}
		}
		if problem == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster not agreed within %v: %s", timeout, problem)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
