package main

import (
	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// openRedis returns a Store on the Redis at addrs, one server or nodes of
// a Redis Cluster (rueidis finds out which, and cluster says), with keys
// under prefix (the backend's default if empty), and a function that
// closes the Store and then the client, which the caller owns.
func openRedis(addrs []string, prefix string) (store retail.Store, closeFn func(), cluster bool, err error) {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs})
	if err != nil {
		return nil, nil, false, err
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
