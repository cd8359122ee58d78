package retailhttp_test

import (
	"net/http/httptest"
	"testing"

	"github.com/retailkit/retail/retailhttp"
)

func TestLikelyBot(t *testing.T) {
	for _, tc := range []struct {
		ua   string
		want bool
	}{
		{"", true},
		{"   ", true},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", true},
		{"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", true},
		{"Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", true},
		{"Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)", true},
		{"Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)", true},
		{"CCBot/2.0 (https://commoncrawl.org/faq/)", true},
		{"Sogou web crawler", true},
		{"Mozilla/5.0 (Linux; Android 10; CUBOT X19 S) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36", false},
		{"Mozilla/5.0 (Linux; Android 10; CUBOT robot)", true}, // a bot after a Cubot still counts
		{"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", false},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", false},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.ua != "" {
			r.Header.Set("User-Agent", tc.ua)
		}
		if got := retailhttp.LikelyBot(r); got != tc.want {
			t.Errorf("LikelyBot(User-Agent %q) = %v, want %v", tc.ua, got, tc.want)
		}
	}
}
