package redistest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// readyTimeout bounds how long a new server may take to answer PING.
	readyTimeout = 10 * time.Second
	// stopGrace is how long a server gets to exit after SIGTERM before it is killed.
	stopGrace = 5 * time.Second
	// bindAttempts is how many ports a server is tried on before giving up.
	bindAttempts = 4
)

// ErrUnavailable means the programs needed to start Redis are not on PATH and the environment
// names no existing server. Tests treat it as a reason to Skip.
var ErrUnavailable = errors.New("redistest: redis not available")

// process is one redis-server we started, with its own temporary directory.
type process struct {
	port  int
	dir   string
	bin   string
	wrap  []string // a command the server runs under (say valgrind and its options), if any
	extra []string // the arguments beyond the standard ones, for restart
	cmd   *exec.Cmd
	done  chan struct{} // closed once the process has exited and been waited for
	err   error         // the Wait result, valid after done is closed

	closeOnce sync.Once
	closeErr  error
}

func (p *process) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

// errPortTaken means the server could not bind its port (or its cluster bus port), or something
// else answered there: pick another port and try again.
var errPortTaken = errors.New("port taken")

// startOwned starts redis-server on port (or on fresh ports after a bind failure) and waits until
// it answers. extra is appended to the standard arguments; it may refer to the temporary
// directory as {dir}.
func startOwned(port int, bus bool, extra ...string) (*process, error) {
	return startOwnedUnder(port, bus, nil, extra)
}

// startOwnedUnder is startOwned with redis-server run as the argument of
// the command wrap, if any.
func startOwnedUnder(port int, bus bool, wrap, extra []string) (*process, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w: redis-server is not on PATH and %s is not set", ErrUnavailable, envAddr)
	}
	for attempt := 1; ; attempt++ {
		p, err := startProcess(bin, port, wrap, extra)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, errPortTaken) || attempt == bindAttempts {
			return nil, err
		}
		ports, perr := pickPorts(1, bus)
		if perr != nil {
			return nil, perr
		}
		port = ports[0]
	}
}

func startProcess(bin string, port int, wrap, extra []string) (*process, error) {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	p := &process{port: port, dir: dir, bin: bin, wrap: wrap, extra: extra}
	if err := p.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := p.waitReady(); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// start runs the server in p.dir; the caller waits until it is ready.
func (p *process) start() error {
	dir := p.dir
	p.done = make(chan struct{})
	args := []string{
		"--port", strconv.Itoa(p.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--protected-mode", "no",
		"--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"),
	}
	for _, a := range p.extra {
		args = append(args, strings.ReplaceAll(a, "{dir}", dir))
	}
	// Errors before the log file is open (a bad option) go to stdout/stderr.
	out, err := os.OpenFile(filepath.Join(dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	name := p.bin
	if len(p.wrap) > 0 {
		name, args = p.wrap[0], append(append(slices.Clip(p.wrap[1:]), p.bin), args...)
	}
	p.cmd = exec.Command(name, args...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = sysProcAttr()

	// The parent-death signal fires when the thread that forked the child exits, not the
	// process, and the Go runtime may retire threads. So fork from a locked thread and keep it
	// locked until the server has exited.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = p.cmd.Wait()
		out.Close()
		close(p.done)
	}()
	if err := <-started; err != nil {
		out.Close()
		return fmt.Errorf("redistest: start redis-server: %w", err)
	}
	return nil
}

// kill stops the server at once, as a crash would, keeping its directory.
func (p *process) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// restart starts a server killed by kill again, on the same port and directory.
func (p *process) restart() error {
	if err := p.start(); err != nil {
		return err
	}
	return p.waitReady()
}

// waitReady waits until the server answers PING, and checks that the answer came from our
// process rather than from something that took the port first.
func (p *process) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-p.done:
			tail := p.logTail()
			if strings.Contains(tail, "in use") {
				return fmt.Errorf("redistest: redis-server on port %d: %w\n%s", p.port, errPortTaken, tail)
			}
			return fmt.Errorf("redistest: redis-server on port %d exited before answering PING (%v)\n%s", p.port, p.err, tail)
		default:
		}
		if reply, err := do(p.addr(), 200*time.Millisecond, "PING"); err == nil && reply == "PONG" {
			info, err := do(p.addr(), time.Second, "INFO", "server")
			if err == nil && infoField(info, "process_id") == strconv.Itoa(p.cmd.Process.Pid) {
				return nil
			}
			if err == nil {
				return fmt.Errorf("redistest: port %d answered, but not from our redis-server: %w", p.port, errPortTaken)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: redis-server on port %d did not answer PING within %v\n%s", p.port, readyTimeout, p.logTail())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logTail returns the last lines of the server's output and log, for error messages.
func (p *process) logTail() string {
	var b strings.Builder
	for _, name := range []string{"stdout.log", "redis.log"} {
		data, err := os.ReadFile(filepath.Join(p.dir, name))
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		fmt.Fprintf(&b, "--- %s:\n%s\n", filepath.Join(p.dir, name), strings.Join(lines, "\n"))
	}
	return b.String()
}

// close stops the server (SIGTERM, then SIGKILL after stopGrace) and removes its directory.
// It is safe to call more than once.
func (p *process) close() error {
	p.closeOnce.Do(func() {
		select {
		case <-p.done:
		default:
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				p.cmd.Process.Kill()
			}
			select {
			case <-p.done:
			case <-time.After(stopGrace):
				p.cmd.Process.Kill()
				<-p.done
			}
		}
		p.closeErr = os.RemoveAll(p.dir)
	})
	return p.closeErr
}
