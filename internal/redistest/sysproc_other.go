//go:build !linux

package redistest

import "syscall"

// sysProcAttr is nil where there is no parent-death signal: a server outlives a test binary that
// dies without calling Close.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}
