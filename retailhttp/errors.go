package retailhttp

import (
	"context"
	"errors"
	"log/slog"

	"github.com/retailkit/retail"
)

// ErrNoHandler is matched by the error that a [SessionManager]'s Ensure,
// Login, Renew, Logout and LogoutEverywhere return when their context was
// not passed on by that manager's [SessionManager.Handler] (nor made by
// [WithSession], which every manager accepts), for instance
// context.Background(). Without the Handler the manager cannot tell which
// session the request has, and starting a new one would lose a guest's
// cart; so nothing is written: no cookie, no Store call.
//
// A context that another SessionManager's Handler passed on is refused
// too: its session came from that manager's cookie, which this one's would
// not replace. Where two managers' Handlers are nested, the context is
// the inner one's, so only the inner manager's calls work.
var ErrNoHandler = errors.New("context did not pass through this SessionManager's Handler")

// invalid returns the error for an argument or option of op that breaks
// a rule: an *retail.InputError, which matches retail.ErrInvalid.
func invalid(op, arg, reason string) error {
	return &retail.InputError{Op: "retailhttp." + op, Arg: arg, Reason: reason}
}

// logError logs an error that a middleware survives, on l or on
// slog.Default() if l is nil. Nothing is logged once ctx has ended: the
// request is over, and its errors would only say so.
func logError(ctx context.Context, l *slog.Logger, msg string, err error, attrs ...slog.Attr) {
	if ctx.Err() != nil {
		return
	}
	if l == nil {
		l = slog.Default()
	}
	l.LogAttrs(ctx, slog.LevelError, msg, append(attrs, slog.Any("err", err))...)
}
