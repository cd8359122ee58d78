// Package redistest gives tests private Redis servers and the policy for skipping when there is none.
//
// StartServer and StartCluster start redis-server processes on free loopback ports, each with its
// own temporary directory and no persistence, and wait until they answer. Close stops them. They
// never use port 6379, which belongs to whoever runs the machine. Servers are child processes that
// the kernel kills if the test binary dies (on Linux), so a crashed test run leaves nothing behind.
//
// The environment can point tests at servers someone else runs instead:
//
//	RETAIL_REDIS_ADDR           host:port of an existing standalone server. StartServer returns it
//	                            with Owned() == false; tests must not FLUSHALL it and must isolate
//	                            their data by key prefix.
//	RETAIL_REDIS_CLUSTER_ADDRS  comma-separated seed addresses of an existing Redis Cluster, used by
//	                            StartCluster in the same way.
//	RETAIL_REQUIRE_REDIS=1      every Skip becomes a failure, so CI cannot pass by skipping the
//	                            real-Redis tests.
//
// Without those variables, StartServer and StartCluster need redis-server on PATH, and
// StartCluster redis-cli too; when one is missing the error matches ErrUnavailable, which callers
// turn into Skip. Any other error is a real failure.
//
// Starting a server takes milliseconds, a cluster about two seconds (a master reports
// cluster_state:ok no sooner than two seconds after it started), so start them once per test
// binary from TestMain and give each test its own key prefix:
//
//	var server *redistest.Server
//	var serverErr error
//
//	func TestMain(m *testing.M) {
//		server, serverErr = redistest.StartServer()
//		code := m.Run()
//		if server != nil {
//			server.Close()
//		}
//		os.Exit(code)
//	}
//
//	func TestSomething(t *testing.T) {
//		switch {
//		case errors.Is(serverErr, redistest.ErrUnavailable):
//			redistest.Skip(t, serverErr.Error())
//		case serverErr != nil:
//			t.Fatal(serverErr)
//		}
//		...
//	}
package redistest
