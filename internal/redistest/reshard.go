package redistest

// StartPrivateCluster starts a private cluster of masters masters without
// replicas, as StartCluster does, but never uses
// RETAIL_REDIS_CLUSTER_ADDRS: tests that move slots change the cluster's
// shape.
func StartPrivateCluster(masters int, extra ...string) (*Cluster, error) {
	return startCluster(masters, 0, extra)
}
