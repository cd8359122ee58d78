package redistest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Server is a running standalone Redis: one this package started, or the one RETAIL_REDIS_ADDR names.
type Server struct {
	addr string
	proc *process // nil if not owned
}

// StartServer returns the server RETAIL_REDIS_ADDR names, after checking that it answers PING,
// or starts a private one on a free loopback port, with extra given to redis-server after the
// package's own arguments (a server RETAIL_REDIS_ADDR names runs as its owner configured it). The
// error matches ErrUnavailable when neither is possible because redis-server is not on PATH.
func StartServer(extra ...string) (*Server, error) {
	if addr := strings.TrimSpace(os.Getenv(envAddr)); addr != "" {
		if err := ping(addr); err != nil {
			return nil, fmt.Errorf("redistest: %s=%s: %w", envAddr, addr, err)
		}
		return &Server{addr: addr}, nil
	}
	return startPrivate(nil, extra)
}

// StartServerUnder starts a private redis-server on a free loopback port
// as the argument of the command wrap (for example valgrind and its
// options, which run the server in their own process), and waits until it
// answers. It never uses RETAIL_REDIS_ADDR. The error matches
// ErrUnavailable when redis-server is not on PATH.
func StartServerUnder(wrap ...string) (*Server, error) {
	if len(wrap) == 0 {
		return nil, errors.New("redistest: StartServerUnder needs a command")
	}
	return startPrivate(wrap, nil)
}

// startPrivate starts a private redis-server on a free loopback port, as
// the argument of the command wrap if there is one, with extra after the
// package's arguments, and waits until it answers.
func startPrivate(wrap, extra []string) (*Server, error) {
	ports, err := pickPorts(1, false)
	if err != nil {
		return nil, err
	}
	p, err := startOwnedUnder(ports[0], false, wrap, extra)
	if err != nil {
		return nil, err
	}
	return &Server{addr: p.addr(), proc: p}, nil
}

// Pid returns the process id of a server this package started (that of
// the command it runs under, if any), or 0.
func (s *Server) Pid() int {
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Owned reports whether this package started the server, so tests may FLUSHALL it. Tests must
// leave a server they do not own as they found it apart from keys under their own prefix.
func (s *Server) Owned() bool { return s.proc != nil }

// Close stops the server and removes its temporary directory if it is owned; it leaves other
// servers running. It is safe to call more than once.
func (s *Server) Close() error {
	if s.proc == nil {
		return nil
	}
	return s.proc.close()
}

// Restart kills a server this package started, as a crash would, and
// starts it again on the same port. The package's servers keep nothing on
// disk, so it comes back empty, as a Redis without persistence does.
func (s *Server) Restart() error {
	if s.proc == nil {
		return errors.New("redistest: Restart needs a server this package started")
	}
	s.proc.kill()
	return s.proc.restart()
}

func ping(addr string) error {
	reply, err := do(addr, 2*time.Second, "PING")
	if err != nil {
		return fmt.Errorf("PING: %w", err)
	}
	if reply != "PONG" {
		return fmt.Errorf("PING = %q, want PONG", reply)
	}
	return nil
}

// CommandCalls returns how many commands the server has run, by INFO
// commandstats: a test counts what a call costs the server as the
// difference of two readings, less 1 for the INFO of the first reading,
// which the second counts.
func (s *Server) CommandCalls() (int, error) {
	calls, err := s.commandStats()
	total := 0
	for _, n := range calls {
		total += n
	}
	return total, err
}

// Calls returns how many times the server has run the command name, in
// lower case ("eval").
func (s *Server) Calls(name string) (int, error) {
	calls, err := s.commandStats()
	return calls[name], err
}

// commandStats returns the calls of each command INFO commandstats lists.
func (s *Server) commandStats() (map[string]int, error) {
	info, err := do(s.addr, 5*time.Second, "INFO", "commandstats")
	if err != nil {
		return nil, err
	}
	calls := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isStat := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isStat {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					return nil, fmt.Errorf("redistest: INFO commandstats: %q: %w", line, err)
				}
				calls[name] = n
			}
		}
	}
	return calls, nil
}
