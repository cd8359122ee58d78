package redistest

import "syscall"

// sysProcAttr makes the kernel kill a server when the thread that started it exits. startProcess
// keeps that thread locked until the server has exited, so this fires only when the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
