package rueidistest_test

import (
	"testing"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/backend/rueidisbackend/rueidistest"
	"github.com/retailkit/retail/conformance"
)

// onMyRedis is README.md's test on your own Redis, quoted there as
// TestConformanceOnMyRedis (here a test of that name would run, on a server
// that is not there); TestREADME_QuotesOwnRedisTest in package retail
// checks the quote.
func onMyRedis(t *testing.T) {
	opt := rueidis.ClientOption{InitAddress: []string{"10.0.0.7:6379"}} // a cluster: its nodes
	conformance.Run(t, rueidistest.Factory(opt))
}

var _ = onMyRedis
