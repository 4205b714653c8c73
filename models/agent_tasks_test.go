package models_test

import (
	"testing"

	"suanli/apperr"
	"suanli/dbtest"
	"suanli/models"
	"suanli/models/supply"
)

func TestAgentTaskReads(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newRentalWorld(t, db)
		task := &models.AgentTask{NodeID: w.offer.NodeID, Kind: "verify", IdemKey: "r1/a1/verify", Payload: "{}", Status: models.TaskQueued, CreatedAt: w.now}
		if err := db.W.Create(task).Error; err != nil {
			t.Fatal(err)
		}
		if got, err := supply.AgentTaskByKey(w.ctx, db, "r1/a1/verify"); err != nil || got.ID != task.ID {
			t.Errorf("by key: %v", err)
		}
		if _, err := supply.AgentTaskByKey(w.ctx, db, "nope"); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("unknown key: %v", err)
		}
		if got, err := supply.AgentTaskByID(w.ctx, db, task.ID); err != nil || got.IdemKey != task.IdemKey {
			t.Errorf("by id: %v", err)
		}
		if _, err := supply.AgentTaskByID(w.ctx, db, 1<<40); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("unknown id: %v", err)
		}
		got, err := supply.NodeTask(db.W, w.offer.NodeID, task.ID)
		if err != nil || got.ID != task.ID {
			t.Fatalf("node's task: %v", err)
		}
		// Another node's task is as good as missing.
		if _, err := supply.NodeTask(db.W, w.offer.NodeID+1, task.ID); apperr.Code(err) != apperr.ENOTFOUND {
			t.Errorf("another node's task: %v", err)
		}
	})
}

func TestFinishAgentTask(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		w := newRentalWorld(t, db)
		task := &models.AgentTask{NodeID: w.offer.NodeID, Kind: "stop", IdemKey: "r1/stop/0", Payload: "{}", Status: models.TaskSent, CreatedAt: w.now}
		if err := db.W.Create(task).Error; err != nil {
			t.Fatal(err)
		}
		if err := supply.FinishAgentTask(db.W, task, true, `{"ok":true}`, w.now); err != nil {
			t.Fatal(err)
		}
		if task.Status != models.TaskDone || task.OK == nil || !*task.OK || task.Result != `{"ok":true}` || task.DoneAt == nil {
			t.Errorf("task in memory %+v", task)
		}
		got, _ := supply.AgentTaskByID(w.ctx, db, task.ID)
		if got.Status != models.TaskDone || got.OK == nil || !*got.OK || got.Result != `{"ok":true}` || got.DoneAt == nil || !got.DoneAt.Equal(w.now) {
			t.Errorf("stored task %+v", got)
		}
	})
}
