package rentals_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"suanli/agent"
	"suanli/agent/docker"
	"suanli/dbtest"
	"suanli/dockertest"
	"suanli/models"
	"suanli/rentals"
)

// localNotes is what the renter writes in /workspace on the first node.
const localNotes = "written-on-the-first-node\n"

// localMove is a rental that moved off local storage: on a datacentre
// whose storage is local, two nodes whose agents keep workspaces in
// docker volumes on their own disk (no --volume-root); the renter rented
// debian-sshd with a 5 GB volume, logged in on the first node and wrote
// localNotes in /workspace; the first node went silent and the rental
// now runs on the second with a new, empty volume. The first node's
// agent is paused, not gone: its docker volume is still on the (shared)
// daemon, and first.Resume() brings it back. (Its container may be gone:
// a stop that reached the agent just before it went dark is carried
// out, as on a host whose network failed a moment later.)
//
// Starting on the old node when it returns (a Start with the old volume)
// continues from here: resume m.first, start the rental on m.old, wait
// until it runs on m.d.first and read localNotes over SSH with m.signer.
type localMove struct {
	d *dockerRig
	// first is the first node's agent (paused).
	first  *simNode
	signer ssh.Signer
	// rental is the rental after the move; before and after its access
	// details on the first and the second node.
	rental        models.Rental
	before, after *agent.Access
	// old is the volume whose files stay on the first node; cur the new
	// one on the second.
	old, cur models.Volume
}

// movedOffLocalStorage makes a localMove on db (see localMove).
func movedOffLocalStorage(t *testing.T, db *models.DB) *localMove {
	t.Helper()
	d := newDockerRig(t, db, models.StorageLocal)
	m := &localMove{d: d, first: d.startAgents()}
	key, signer := dockertest.RenterKey(t, "renter@e2e")
	m.signer = signer
	rt := d.mustRent(d.offer.ID, 1, func(in *rentals.RentInput) { in.Image = "debian-sshd"; in.VolumeGB = 5; in.SSHPublicKey = key })
	d.logOnFailure(rt.ID)
	run := d.waitStatus(rt.ID, models.RentalRunning)
	m.before = rentals.Access(&run)
	if run.NodeID == nil || *run.NodeID != d.first || m.before == nil {
		t.Fatalf("the rental runs on node %v with access %+v, want the offer's node %d", run.NodeID, m.before, d.first)
	}
	sshRun(t, m.before, signer, "echo "+strings.TrimSpace(localNotes)+" > /workspace/notes.txt")
	m.old = d.volume(*rt.VolumeID)
	if m.old.Storage != models.StorageLocal || m.old.NodeID == nil || *m.old.NodeID != d.first {
		t.Fatalf("the volume is %+v, want local storage on node %d", m.old, d.first)
	}
	m.rental = d.silenceFirst(m.first, rt.ID)
	m.after = rentals.Access(&m.rental)
	m.cur = d.volume(*m.rental.VolumeID)
	m.old = d.volume(m.old.ID)
	return m
}

// On local storage a moved rental's files stay on the node that failed,
// with real containers: after the move the renter's /workspace on the
// new node is a new, empty docker volume (another key, another volume on
// the daemon), while the old one still holds the file on the first node;
// the rental's timeline says so (files_left, naming both volumes and the
// node), the API lists the old volume with its node, still billed as
// storage, and the rental page says it in both languages. Once the first
// node is back the stopped rental starts there with the old volume, and
// the file is there. On both databases.
func TestDockerLocalVolumesFilesStayOnItsNodeWhenTheRentalMoves(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		m := movedOffLocalStorage(t, db)
		d, rt := m.d, m.rental

		// The new node's /workspace is empty: the file is not there.
		if got := sshRun(t, m.after, m.signer, "ls -A /workspace | wc -l; test -e /workspace/notes.txt && echo there || echo absent"); got != "0\nabsent\n" {
			t.Errorf("on the new node /workspace lists %q, want it empty and no notes.txt", got)
		}
		// …because it is another volume: another key, another docker volume.
		if m.cur.ID == m.old.ID || m.cur.WorkspaceKey == m.old.WorkspaceKey || m.cur.NodeID == nil || *m.cur.NodeID != d.second ||
			m.cur.Storage != models.StorageLocal || m.cur.SizeGB != m.old.SizeGB || m.cur.Status != models.VolumeActive {
			t.Fatalf("after the move the rental's volume is %+v (the old one %+v), want a new active 5 GB local volume on node %d", m.cur, m.old, d.second)
		}
		oldName, curName := docker.VolumeName(m.old.WorkspaceKey, 0), docker.VolumeName(m.cur.WorkspaceKey, 0)
		info, err := d.cli.ContainerInspect(d.ctx, d.container(d.second, rt.ID))
		if err != nil {
			t.Fatalf("the container on the new node: %v", err)
		}
		var mounted []string
		for _, mp := range info.Mounts {
			if mp.Destination == "/workspace" {
				mounted = append(mounted, mp.Name)
			}
		}
		if len(mounted) != 1 || mounted[0] != curName {
			t.Errorf("the new node's container mounts %v at /workspace, want the new volume %s (the old one is %s)", mounted, curName, oldName)
		}
		// The file stays behind, in the old volume on the first node.
		if got, err := d.volumeFile(oldName, "notes.txt"); err != nil || got != localNotes {
			t.Errorf("the old volume %s holds notes.txt %q (%v), want %q", oldName, got, err, localNotes)
		}
		if got, err := d.volumeFile(curName, "notes.txt"); err == nil {
			t.Errorf("the new volume %s holds notes.txt %q, want none", curName, got)
		}

		// The old volume: still active on the first node, still billed.
		if m.old.Status != models.VolumeActive || m.old.NodeID == nil || *m.old.NodeID != d.first || m.old.DeletedAt != nil {
			t.Errorf("the old volume is %+v, want active on node %d", m.old, d.first)
		}
		e := d.event(rt.ID, "files_left")
		firstName := nodeName(t, d, d.first)
		wantEN := "local storage: the files of volume #" + itoa(m.old.ID) + " stay on node " + firstName + "; the rental runs with new empty volume #" + itoa(m.cur.ID)
		before := d.volume(m.old.ID).BilledFen
		d.clock.Advance(24 * time.Hour) // 5 GB at ¥0.30 a GB-month: 5 fen a day
		d.meter()
		if got := d.volume(m.old.ID).BilledFen; got < before+5 {
			t.Errorf("a day after the move the old volume was billed %d → %d fen, want at least 5 more", before, got)
		}

		// The API: the rental's volume is the new one; the volumes listing
		// has the old one, with its node, billed.
		token, _, err := d.accounts.CreateAPIToken(d.ctx, d.user, "local-e2e")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Volume struct {
				ID      int64  `json:"id"`
				Storage string `json:"storage"`
				NodeID  *int64 `json:"node_id"`
			} `json:"volume"`
			Events []struct{ Kind, Detail string } `json:"events"`
		}
		apiGet(t, d.url+"/api/v1/rentals/"+itoa(rt.ID), token, &got)
		if got.Volume.ID != m.cur.ID || got.Volume.Storage != "local" || got.Volume.NodeID == nil || *got.Volume.NodeID != d.second {
			t.Errorf("GET the rental: volume %+v, want #%d, local, on node %d", got.Volume, m.cur.ID, d.second)
		}
		said := false
		for _, ev := range got.Events {
			said = said || (ev.Kind == "files_left" && ev.Detail == e.Detail &&
				strings.Contains(ev.Detail, "the files of volume #"+itoa(m.old.ID)+" stay on node "+itoa(d.first)))
		}
		if !said {
			t.Errorf("GET the rental: events %+v, want files_left saying the files of volume #%d stay on node %d", got.Events, m.old.ID, d.first)
		}
		var list struct {
			Volumes []struct {
				ID        int64  `json:"id"`
				Storage   string `json:"storage"`
				NodeID    *int64 `json:"node_id"`
				Status    string `json:"status"`
				FenPerDay int64  `json:"fen_per_day"`
				BilledFen int64  `json:"billed_fen"`
				RentalID  *int64 `json:"rental_id"`
			} `json:"volumes"`
		}
		apiGet(t, d.url+"/api/v1/volumes", token, &list)
		found := false
		for _, v := range list.Volumes {
			if v.ID != m.old.ID {
				continue
			}
			found = true
			if v.Storage != "local" || v.NodeID == nil || *v.NodeID != d.first || v.Status != "active" || v.FenPerDay != 5 || v.BilledFen < before+5 || v.RentalID != nil {
				t.Errorf("GET /api/v1/volumes lists the old volume as %+v, want local on node %d, active, 5 fen a day, billed, attached to no rental", v, d.first)
			}
		}
		if !found {
			t.Errorf("GET /api/v1/volumes does not list the old volume #%d: %+v", m.old.ID, list.Volumes)
		}

		// The rental page says it, in both languages.
		b := d.browser()
		for lang, want := range map[string][]string{
			"en": {"Moved without its files", wantEN, "local storage on node " + nodeName(t, d, d.second)},
			"zh-CN": {"已迁移，文件未随迁", "本地存储：数据盘 #" + itoa(m.old.ID) + " 的文件留在节点 " + firstName + " 上；实例使用新的空数据盘 #" + itoa(m.cur.ID) + " 运行",
				"节点 " + nodeName(t, d, d.second)},
		} {
			page := b.get("/rentals/"+itoa(rt.ID), lang)
			for _, w := range want {
				if !strings.Contains(page, w) {
					t.Errorf("the rental page (%s) does not say %q", lang, w)
				}
			}
		}

		// The first node comes back: stopped, the rental starts there with
		// the volume that holds the file, and the renter finds it again.
		m.first.Resume()
		d.markNodeAlive(d.first)
		d.stop(rt.ID)
		if _, err := d.rentals.Start(d.ctx, d.user, d.org, rt.ID, rentals.StartInput{VolumeID: m.old.ID}); err != nil {
			t.Fatal(err)
		}
		back := d.waitStatus(rt.ID, models.RentalRunning)
		if back.NodeID == nil || *back.NodeID != d.first || *back.VolumeID != m.old.ID {
			t.Fatalf("started on node %v with volume %v, want node %d with the old volume %d", back.NodeID, back.VolumeID, d.first, m.old.ID)
		}
		if got := sshRun(t, rentals.Access(&back), m.signer, "cat /workspace/notes.txt"); got != localNotes {
			t.Errorf("back on the first node /workspace/notes.txt is %q, want %q", got, localNotes)
		}
		if v := d.volume(m.cur.ID); v.Status != models.VolumeActive || v.DeleteAfter != nil {
			t.Errorf("the volume made on the second node: %+v, want kept, unmounted, with no deletion date", v)
		}
		d.checkLedger()
	})
}

// nodeName is a node's name.
func nodeName(t *testing.T, d *dockerRig, id int64) string {
	t.Helper()
	var n models.Node
	if err := d.db.R.First(&n, id).Error; err != nil {
		t.Fatal(err)
	}
	return n.Name
}

// apiGet GETs an API path with a bearer token and decodes the answer.
func apiGet(t *testing.T, u, token string, out any) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept-Language", "en")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", u, res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}
