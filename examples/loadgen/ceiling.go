package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ceiling is what redis-benchmark measured: the server's pipelined
// throughput for plain SET and GET, a bound no Store on it can beat with
// the same round trips.
type ceiling struct {
	command  string
	set, get float64
}

func (c *ceiling) mean() float64 { return (c.set + c.get) / 2 }

// benchmarkRequests is how many requests redis-benchmark sends per test.
const benchmarkRequests = 200_000

// measureCeiling runs redis-benchmark against the first of addrs (with
// --cluster if there are several). It refuses port 6379, the usual shared
// server, unless force is set.
func measureCeiling(ctx context.Context, addrs []string, force bool) (*ceiling, error) {
	path, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return nil, errors.New("redis-benchmark is not on PATH")
	}
	host, port, err := net.SplitHostPort(addrs[0])
	if err != nil {
		return nil, err
	}
	if port == "6379" && !force {
		return nil, errors.New("not measuring port 6379 (the usual shared server); pass -ceiling on to measure it")
	}
	args := []string{"-h", host, "-p", port, "-P", "16", "-q", "-t", "set,get", "-n", strconv.Itoa(benchmarkRequests)}
	if len(addrs) > 1 {
		args = append([]string{"--cluster"}, args...)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("redis-benchmark: %w: %s", err, strings.TrimSpace(string(out)))
	}
	set, get, err := parseBenchmark(string(out))
	if err != nil {
		return nil, err
	}
	return &ceiling{command: "redis-benchmark " + strings.Join(args, " "), set: set, get: get}, nil
}

var benchmarkRE = regexp.MustCompile(`(?m)(SET|GET): ([0-9.]+) requests per second`)

// parseBenchmark reads the SET and GET rates from redis-benchmark -q
// output.
func parseBenchmark(out string) (set, get float64, err error) {
	for _, m := range benchmarkRE.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return 0, 0, err
		}
		if m[1] == "SET" {
			set = v
		} else {
			get = v
		}
	}
	if set == 0 || get == 0 {
		return 0, 0, fmt.Errorf("no SET and GET rates in redis-benchmark's output %q", out)
	}
	return set, get, nil
}
