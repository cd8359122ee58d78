package retailhttp

import (
	"net/http"
	"strings"
)

// LikelyBot reports whether r looks like it comes from a crawler rather
// than a person's browser, by its User-Agent header: empty, or naming a
// bot, crawler, spider or slurp (Yahoo's crawler), in any case. It is made
// for [SessionOptions].CountView, to keep crawlers from ranking items:
//
//	CountView: func(r *http.Request) bool { return !retailhttp.LikelyBot(r) },
//
// It is deliberately conservative: it catches the crawlers that say what
// they are (Googlebot, bingbot, AhrefsBot, Baiduspider, ...), not the ones
// that pose as browsers, and it spares the browsers of phones of the Cubot
// brand, whose User-Agent contains "bot". A header is only a claim; it is
// no defence against anyone set on inflating views.
func LikelyBot(r *http.Request) bool {
	ua := strings.ToLower(r.Header.Get("User-Agent"))
	if strings.TrimSpace(ua) == "" {
		return true
	}
	if strings.Contains(ua, "crawl") || strings.Contains(ua, "spider") || strings.Contains(ua, "slurp") {
		return true
	}
	for i := 0; ; {
		j := strings.Index(ua[i:], "bot")
		if j < 0 {
			return false
		}
		i += j
		if !strings.HasSuffix(ua[:i], "cu") {
			return true
		}
		i += len("bot")
	}
}
