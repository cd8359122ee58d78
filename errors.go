package retail

import "errors"

// Sentinel errors. Match them with errors.Is; errors from a backend's client
// stay reachable through errors.As.
var (
	// ErrInvalid is matched by every error returned for an argument that
	// breaks the input rules (see MaxIDLen). Nothing is written when it is
	// returned. The concrete error is an *InputError.
	ErrInvalid = errors.New("retail: invalid input")

	// ErrClosed is matched by errors returned from a Store after Close.
	ErrClosed = errors.New("retail: store is closed")

	// ErrNoSession is matched by errors returned when an operation needs a
	// live session and the token has none (for example AddToCart after the
	// session was cleaned). Nothing is written when it is returned.
	ErrNoSession = errors.New("retail: no such session")
)

// InputError describes an argument that breaks the input rules. It matches
// ErrInvalid with errors.Is.
type InputError struct {
	Op     string // the operation, e.g. "UpdateToken" or "PageCache"
	Arg    string // the argument, e.g. "item"
	Reason string // what is wrong, e.g. "longer than 256 bytes"
}

func (e *InputError) Error() string {
	return "retail: " + e.Op + ": invalid " + e.Arg + ": " + e.Reason
}

// Is reports whether target is ErrInvalid.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }
