//go:build !unix

package conformance

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
