package retailotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/retailkit/retail"
)

// observeStats registers the observable instruments that report store's
// Stats, read once per collection.
func observeStats(meter metric.Meter, store retail.Store, backend attribute.KeyValue) (metric.Registration, error) {
	counter := func(name, unit, desc string) (metric.Int64ObservableCounter, error) {
		return meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	}
	pages, err1 := counter("retail.page_cache.requests", "{request}",
		"Page requests served from the page cache (hit), rendered though they could have been cached (miss), or passed by (bypass).")
	coalesced, err2 := counter("retail.page_cache.coalesced", "{request}",
		"Page cache misses given a concurrent request's render instead of rendering.")
	client, err3 := counter("retail.client_cache.reads", "{read}",
		"Backend reads served from the client-side cache (hit) or sent to the server (miss).")
	started, err4 := counter("retail.sessions.started", "{session}", "Sessions StartSession created.")
	ended, err5 := counter("retail.sessions.ended", "{session}",
		"Sessions ended, by reason: logout (Logout calls), logout_user (sessions LogoutUser ended), cleaned (by CleanSessions).")
	repaired, err6 := counter("retail.sessions.repaired", "{entry}", "Session index entries RepairSessions found wrong.")
	lag, err7 := meter.Int64ObservableGauge("retail.cleaner.lag", metric.WithUnit("{session}"),
		metric.WithDescription("Sessions held beyond the session cleaner's Keep when it last counted them."))
	rows, err8 := counter("retail.rows.refreshed", "{row}", "Rows the row cachers refreshed.")
	rescales, err9 := counter("retail.views.rescales", "{rescale}", "Rescales of the view counts.")
	flushes, err10 := counter("retail.views.flush_failures", "{failure}", "Failures to send the views the process added up.")
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7, err8, err9, err10); err != nil {
		return nil, err
	}

	with := func(kvs ...attribute.KeyValue) metric.ObserveOption {
		return metric.WithAttributes(append(kvs, backend)...)
	}
	var (
		hit, miss, bypass         = with(ResultKey.String("hit")), with(ResultKey.String("miss")), with(ResultKey.String("bypass"))
		logout, logoutUser, clean = with(ReasonKey.String("logout")), with(ReasonKey.String("logout_user")), with(ReasonKey.String("cleaned"))
		plain                     = with()
	)
	// Counts are uint64 and the instruments int64: a count past 2^63 would
	// take centuries at any rate a Store reaches.
	n := func(v uint64) int64 { return int64(v) }
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := store.Stats()
		o.ObserveInt64(pages, n(st.PageHits), hit)
		o.ObserveInt64(pages, n(st.PageMisses), miss)
		o.ObserveInt64(pages, n(st.PageBypasses), bypass)
		o.ObserveInt64(coalesced, n(st.CoalescedRenders), plain)
		o.ObserveInt64(client, n(st.ClientCacheHits), hit)
		o.ObserveInt64(client, n(st.ClientCacheMisses), miss)
		o.ObserveInt64(started, n(st.SessionsStarted), plain)
		o.ObserveInt64(ended, n(st.Logouts), logout)
		o.ObserveInt64(ended, n(st.LogoutUserSessions), logoutUser)
		o.ObserveInt64(ended, n(st.SessionsCleaned), clean)
		o.ObserveInt64(repaired, n(st.SessionsRepaired), plain)
		o.ObserveInt64(lag, n(st.CleaningLag), plain)
		o.ObserveInt64(rows, n(st.RowsRefreshed), plain)
		o.ObserveInt64(rescales, n(st.Rescales), plain)
		o.ObserveInt64(flushes, n(st.ViewFlushFailures), plain)
		return nil
	}, pages, coalesced, client, started, ended, repaired, lag, rows, rescales, flushes)
}
