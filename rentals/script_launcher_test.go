package rentals_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"suanli/agent"
	"suanli/dbtest"
	"suanli/models"
	"suanli/rentals"
)

// launchScript is a provider's launcher script: it records what it was
// asked to do and prints the access details as JSON.
const launchScript = `#!/bin/sh
set -e
echo "$SUANLI_ACTION $SUANLI_RENTAL_ID $SUANLI_WORKSPACE_ID $SUANLI_GPU_UUIDS" >> "$(dirname "$0")/calls.log"
if [ "$SUANLI_ACTION" = launch ]; then
  case "$SUANLI_SSH_PUBLIC_KEY" in ssh-ed25519\ *) ;; *) echo "no key" >&2; exit 3;; esac
  printf '{"host":"203.0.113.7","port":%d,"user":"root","command":"ssh -p %d root@203.0.113.7"}\n' $((22000 + SUANLI_RENTAL_ID)) $((22000 + SUANLI_RENTAL_ID))
fi
`

// scriptRig is a rig whose agent launches through the script (in dir),
// running for the RTX 4090 offer's node and ready.
func scriptRig(t *testing.T, db *models.DB, script string) (r *rig, o models.Offer, dir string) {
	t.Helper()
	dir = t.TempDir()
	path := filepath.Join(dir, "launch.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r = newRig(t, db, rigOptions{})
	r.launcher = &agent.ScriptLauncher{Path: path}
	o = r.rtxOffer()
	r.startAgent(o.NodeID)
	r.waitReady(o.NodeID)
	return r, o, dir
}

// A rental runs through a provider's launch script on an agent whose GPUs
// are go-nvml mocks: the script gets exactly the verified GPUs, the
// workspace and the renter's key, its access details reach the renter, and
// a stop runs it again.
func TestRentalLaunchesThroughAProviderScript(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r, o, dir := scriptRig(t, db, launchScript)
		rt := r.mustRent(o.ID, 2)
		run := r.waitStatus(rt.ID, models.RentalRunning)
		a := rentals.Access(&run)
		if a == nil || a.Host != "203.0.113.7" || a.Simulated || !strings.HasPrefix(a.Command, "ssh -p ") {
			t.Fatalf("access %+v, want the script's", a)
		}
		held := r.heldGPUs(rt.ID)
		var uuids []string
		for _, g := range held {
			uuids = append(uuids, g.UUID)
		}
		r.stop(rt.ID)
		r.waitStatus(rt.ID, models.RentalStopped)
		calls, err := os.ReadFile(filepath.Join(dir, "calls.log"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
		want := []string{
			"launch " + strconv.FormatInt(rt.ID, 10) + " " + run.WorkspaceID + " " + strings.Join(uuids, ","),
			"stop " + strconv.FormatInt(rt.ID, 10) + " " + run.WorkspaceID,
		}
		if len(lines) != 2 || lines[0] != want[0] || !strings.HasPrefix(lines[1], want[1]) {
			t.Fatalf("script calls:\n%s\nwant:\n%s", calls, strings.Join(want, "\n"))
		}
		r.checkLedger()
	})
}

// A launch script whose error output holds a NUL byte (a binary tool's
// message, say) still gets its failure to the server: the agent's result
// is not refused as malformed and lost, so the rental moves on at once
// instead of waiting out the launch timeout.
func TestALaunchErrorWithANULIsReported(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		r, o, _ := scriptRig(t, db, "#!/bin/sh\n[ \"$SUANLI_ACTION\" = launch ] || exit 0\nprintf 'disk\\000full\\n' >&2\nexit 4\n")
		rt := r.mustRent(o.ID, 1)
		r.eventually("the launch failure reported", func() bool {
			es, err := db.RentalEvents(r.ctx, rt.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				if e.Kind == "node_failed" && strings.Contains(e.Detail, "launch failed") {
					if !strings.Contains(e.Detail, "disk\ufffdfull") {
						t.Errorf("detail %q, want the script's message with the NUL replaced", e.Detail)
					}
					return true
				}
			}
			return false
		})
		r.checkLedger()
	})
}
