package main

import (
	"errors"
	"fmt"
	"net"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// openRedis returns a Store on the Redis at addrs (one server, or several
// addresses of one cluster) with keys under prefix, the function that
// closes it and its client, and whether the server is a cluster. Every
// address, including the nodes a cluster reports, must be on loopback:
// loadgen never loads a machine other than this one.
func openRedis(addrs []string, prefix string) (store retail.Store, closeFn func(), cluster bool, err error) {
	for _, a := range addrs {
		if err := checkLoopback(a); err != nil {
			return nil, nil, false, err
		}
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs})
	if err != nil {
		return nil, nil, false, err
	}
	for a := range client.Nodes() {
		if err := checkLoopback(a); err != nil {
			client.Close()
			return nil, nil, false, fmt.Errorf("the server reports node %s: %w", a, err)
		}
	}
	s, err := rueidisbackend.New(client, rueidisbackend.Options{Prefix: prefix})
	if err != nil {
		client.Close()
		return nil, nil, false, err
	}
	closeFn = func() {
		s.Close()
		client.Close()
	}
	return s, closeFn, client.Mode() == rueidis.ClientModeCluster, nil
}

var errNotLoopback = errors.New("loadgen only targets loopback addresses")

// checkLoopback accepts host:port addresses whose host is a loopback IP or
// "localhost".
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q: %w", addr, errNotLoopback)
}
