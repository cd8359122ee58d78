package main

import (
	"errors"
	"fmt"
	"net"
)

var errNotLoopback = errors.New("loadgen only targets loopback addresses")

// checkLoopback accepts host:port addresses whose host is a loopback IP or
// "localhost". loadgen vets every Redis address with it, including the
// nodes a cluster reports: it never loads a machine other than this one.
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
