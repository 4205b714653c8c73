package benchmarks

import (
	"testing"

	"suanli/models"
	"suanli/models/supply"
)

func TestScheduledTrigger(t *testing.T) {
	if tr := scheduledTrigger(supply.BenchmarkDue{ID: 1}); tr != models.BenchVerified {
		t.Errorf("no report yet: %s", tr)
	}
	id := int64(9)
	if tr := scheduledTrigger(supply.BenchmarkDue{ID: 1, LatestReportID: &id}); tr != models.BenchWeekly {
		t.Errorf("with a report: %s", tr)
	}
}
