// Package retailotel traces and measures a [retail.Store] with OpenTelemetry.
//
//	import retailotel "github.com/retailkit/retail/otel"
//
//	store, err := retailotel.Wrap(inner, retailotel.Options{Backend: "redis"})
//
// It lives in a module of its own, so that the retail module does not
// depend on OpenTelemetry.
//
// # What it records
//
// [Wrap] returns a [*Store] that embeds the Store it wraps, as every
// decorator of a retail.Store does, so the policies built over it (the
// page cache, the workers) count into the wrapped Store's Stats and take
// turns through it. Every call of a method that takes a context makes one
// span, named "retail." and the method ("retail.CheckToken"), a child of
// the span in the call's context, with three attributes:
//
//	retail.operation  the method: "CheckToken"
//	retail.backend    Options.Backend: "memory", "redis"
//	retail.outcome    ok, miss, invalid, no_session, closed, deadline, canceled, backend or panic
//
// An outcome is "miss" when the call returned false in its boolean result
// and no error: nothing found (CheckToken, Value, Page, Row, ItemRank and
// the like), a session that could not be refreshed or renewed, a token
// that StartSession found taken, a turn that Claim found another's. The
// error outcomes are the error's kind, by errors.Is, in this order:
// [retail.ErrInvalid], [retail.ErrNoSession], [retail.ErrClosed],
// [context.DeadlineExceeded], [context.Canceled], and "backend" for every
// other error; "panic" when the wrapped Store panicked (the span is
// ended and the panic goes on to the caller). A failed call's span has
// status Error, described by its kind only, and the kind as attribute
// error.type too.
//
// Metrics, with the attributes retail.operation and retail.backend where
// they count calls, and retail.backend otherwise:
//
//	retail.calls                   counter {call}: calls, by retail.outcome
//	retail.call.duration           histogram, seconds: calls' latency, by retail.outcome
//	retail.errors                  counter {error}: failed calls, by error.type (the kind)
//	retail.page_cache.requests     counter {request}: Stats' page hits, misses, bypasses, by retail.result (hit, miss, bypass)
//	retail.page_cache.coalesced    counter {request}: Stats.CoalescedRenders
//	retail.client_cache.reads      counter {read}: Stats' client-side cache hits and misses, by retail.result (hit, miss)
//	retail.sessions.started        counter {session}: Stats.SessionsStarted
//	retail.sessions.ended          counter {session}: by retail.reason: logout (Stats.Logouts), logout_user, cleaned
//	retail.sessions.repaired       counter {entry}: Stats.SessionsRepaired
//	retail.cleaner.lag             gauge {session}: Stats.CleaningLag
//	retail.rows.refreshed          counter {row}: Stats.RowsRefreshed
//	retail.views.rescales          counter {rescale}: Stats.Rescales
//	retail.views.flush_failures    counter {failure}: Stats.ViewFlushFailures
//
// The counters from retail.page_cache.requests on are observable: they are
// read from [retail.Store.Stats] when the metrics are collected, and so
// count from the wrapped Store's creation, its policies' work included.
// [Store.Close] stops reporting them.
//
// # What it never records
//
// No span or metric holds an argument or a result of a call: no token,
// session ID, user, item, key, page or row. An error's message is not
// recorded either, since a [retail.OpError] names the call's key argument.
// What a call was about is for the caller's own spans to say, if it may.
//
// # Cost
//
// A span and three instrument updates per call. The workers call the
// Store on their own (the row cacher claims due rows every 50 ms): a tracer
// provider that samples keeps their spans few.
package retailotel
