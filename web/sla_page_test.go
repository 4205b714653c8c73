package web_test

import (
	"strings"
	"testing"

	"suanli/dbtest"
)

// The SLA page says how a flapping GPU or node is counted: a failure soon
// after its incident closed reopens it (rentals.TestFlappingGPUOpensOneIncident
// holds the figure to it).
func TestSLAPageSaysFlappingCountsAsDown(t *testing.T) {
	t.Parallel()
	a := newApp(t, dbtest.SQLite(t))
	for lang, says := range map[string]string{
		"en":    "The same failure within 10 minutes of its incident closing reopens that incident",
		"zh-CN": "故障记录关闭后 10 分钟内同一故障再次出现，会重新打开该记录",
	} {
		_, body := a.get("/sla", "Accept-Language", lang)
		if !strings.Contains(body, says) {
			t.Errorf("%s: the SLA page does not say %q", lang, says)
		}
	}
}
