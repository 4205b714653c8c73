package workers_test

import (
	"context"
	"testing"

	"suanli/dbtest"
	"suanli/models"
	"suanli/workers"
)

// --meter-every is honoured however short: a meter pass is unique only
// while one waits or runs, so the next one is queued the moment the last
// has finished (uniqueness by a 30-second period made 30 s the floor).
func TestMeterPassesAreUniqueOnlyWhileOneIsPending(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		q, err := workers.New(db, workers.Options{})
		if err != nil {
			t.Fatal(err)
		}
		first, err := q.Inserter.Insert(ctx, workers.MeterArgs{}, nil)
		if err != nil || first.UniqueSkippedAsDuplicate {
			t.Fatalf("first pass: %+v, %v", first, err)
		}
		again, err := q.Inserter.Insert(ctx, workers.MeterArgs{}, nil)
		if err != nil || !again.UniqueSkippedAsDuplicate {
			t.Fatalf("a second pass while the first waits: %+v, %v; want it skipped", again, err)
		}
		// The first pass finishes; the next one (a second later with
		// --meter-every=1s) is queued at once.
		if err := db.W.Exec(`UPDATE river_job SET state = 'completed', finalized_at = ? WHERE id = ?`, db.Now().UTC(), first.Job.ID).Error; err != nil {
			t.Fatal(err)
		}
		next, err := q.Inserter.Insert(ctx, workers.MeterArgs{}, nil)
		if err != nil || next.UniqueSkippedAsDuplicate {
			t.Fatalf("the pass after a finished one: %+v, %v; want it queued", next, err)
		}
	})
}
