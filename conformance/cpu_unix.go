//go:build unix

package conformance

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) this process has used,
// and true; on systems without getrusage, false.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
