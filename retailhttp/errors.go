package retailhttp

import (
	"context"
	"log/slog"

	"github.com/retailkit/retail"
)

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
