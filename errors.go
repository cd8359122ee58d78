package retail

import (
	"errors"
	"strconv"
)

// Sentinel errors. Match them with errors.Is; a backend's own errors stay
// reachable through errors.As.
var (
	// ErrInvalid is matched by every error returned for an argument or an
	// option that breaks the input rules. Nothing is written when it is
	// returned. The concrete error is an *InputError.
	ErrInvalid = errors.New("invalid input")

	// ErrClosed is matched by errors returned from a Store after Close.
	ErrClosed = errors.New("store is closed")

	// ErrNoSession is matched by errors returned when an operation needs a
	// live session and the token has none (for example AddToCart after the
	// session was cleaned). Nothing is written when it is returned.
	ErrNoSession = errors.New("no such session")
)

// InputError describes an argument or option that breaks the input rules.
// It matches ErrInvalid with errors.Is.
type InputError struct {
	Op     string // the operation, e.g. "UpdateToken" or "NewPageCache"
	Arg    string // the argument or option, e.g. "item" or "TTL"
	Reason string // what is wrong, e.g. "longer than 256 bytes"
}

func (e *InputError) Error() string {
	return "retail: " + e.Op + ": invalid " + e.Arg + ": " + e.Reason
}

// Is reports whether target is ErrInvalid.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// OpError is the error a [Store] returns for a call that failed for any
// reason other than invalid input (which is an [*InputError]): the store
// was closed, the context ended, the session was missing, or the backend
// failed. It names the operation and the call's key argument; errors.Is and
// errors.As see through it to Err.
type OpError struct {
	// Op is the Store method, e.g. "UpdateToken".
	Op string
	// Key is the call's key argument as shown in messages, e.g.
	// `item "kettle"`, or "" for calls without one (SessionCount). Tokens
	// are secrets: only their first four bytes are shown.
	Key string
	// Err is what went wrong: ErrClosed, ErrNoSession, the context's
	// error, or the backend's error as its client returned it.
	Err error
}

func (e *OpError) Error() string {
	if e.Key == "" {
		return "retail: " + e.Op + ": " + e.Err.Error()
	}
	return "retail: " + e.Op + "(" + e.Key + "): " + e.Err.Error()
}

// Unwrap returns Err.
func (e *OpError) Unwrap() error { return e.Err }

// keyArg formats a key argument for an OpError: name and quoted value,
// shortened when long.
func keyArg(name, value string) string {
	const maxShown = 64
	if len(value) > maxShown {
		return name + " " + strconv.Quote(value[:maxShown]) + "…"
	}
	return name + " " + strconv.Quote(value)
}

// tokenArg formats a token for an OpError without giving it away: errors
// end up in logs, and a token is a password.
func tokenArg(token string) string {
	const shown = 4
	if len(token) <= shown {
		return `token "…"`
	}
	return "token " + strconv.Quote(token[:shown]) + "…"
}
