package web_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math/big"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"golang.org/x/crypto/ssh"

	"suanli/agent"
	"suanli/agent/docker"
	"suanli/dockertest"
	"suanli/models"
)

// sshCommand is the command the rental page shows: ssh -p PORT USER@HOST.
var sshCommand = regexp.MustCompile(`^ssh -p (\d+) ([^@\s]+)@(\S+)$`)

// TestBrowserRentWithImageAndSSHIn is a renter's way from the rent form to
// a shell, in real Chromium, against a node agent whose docker launcher
// runs real containers (simulated GPUs: no device request) on the test
// Docker daemon: the renter chooses the catalogue's debian-sshd image and
// a volume size on the rent form, and the rental page, once the rental
// runs, shows the SSH command. The test reads the command as the page's
// copy button copies it, takes host, port and user from it, and logs in
// with the renter's key (golang.org/x/crypto/ssh): the command on the
// page works.
func TestBrowserRentWithImageAndSSHIn(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("browser test in -short mode")
	}
	began := time.Now()
	host := dockertest.Require(t) // fails under CI=true without a daemon
	if img := dockertest.Image(t); img != dockertest.DefaultSSHDImage {
		t.Fatalf("the catalogue's debian-sshd image is %s, the daemon has %s", dockertest.DefaultSSHDImage, img)
	}
	chromiumPath(t)
	cli, err := docker.NewClient(host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })

	a, svc := rentalsApp(t)
	offer := rtxOffer(t, a.db)
	const (
		email    = "zhang.wei@example.com"
		password = "shell-in-2026!"
	)
	_, org := fundedRenter(t, a.db, email, password, 100_000)
	ns := "web" + randomHex(t)
	removeRentalContainers(t, a.db, cli, ns, org)
	l := &docker.Launcher{Client: cli, Host: "127.0.0.1", BindIP: "127.0.0.1", PortBase: portBaseForNextRental(t, a.db),
		Namespace: ns, Simulated: true}
	startAgentWith(t, a, svc, offer.NodeID, l)
	key, signer := dockertest.RenterKey(t, "zhang.wei@laptop")
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	t.Cleanup(cancel)
	b := newEnglishBrowser(t, ctx)

	rentPath := "/offers/" + strconv.FormatInt(offer.ID, 10) + "/rent"
	open(t, b, a.srv.URL+"/login?next="+rentPath, "login page")
	typeInto(t, b, [][2]string{{"f-email", email}, {"f-password", password}})
	p := click(t, b, "#login-submit", "log in")
	must(t, p.Path == rentPath, "after logging in: %s, want the rent form %s\n%s", p.Path, rentPath, p)
	must(t, strings.Contains(p.Text, "Storage ¥0.30 per GB per month"), "the rent form does not state the storage price once in yuan\n%s", p)

	// The image from the form's list, a 20 GB volume, the key, and rent.
	must(t, eval[bool](t, b, `!!document.querySelector('#f-image option[value="debian-sshd"]:not([disabled])')`),
		"the rent form does not offer debian-sshd\n%s", p)
	if err := chromedp.Do(b, chromedp.SetValue(chromedp.ID("f-image"), "debian-sshd")); err != nil {
		t.Fatalf("choose the image: %v", err)
	}
	eval[bool](t, b, `document.getElementById("f-image").dispatchEvent(new Event("change", {bubbles: true}))`)
	typeInto(t, b, [][2]string{{"f-volume_gb", "20"}})
	if err := chromedp.Do(b, chromedp.SendKeys(chromedp.ID("f-ssh_public_key"), key)); err != nil {
		t.Fatalf("type the SSH key: %v\n%s", err, readPage(t, b))
	}
	waitHTMXIdle(t, b)
	must(t, eval[string](t, b, `document.getElementById("f-image").value`) == "debian-sshd", "the image field lost its choice")
	rented := time.Now()
	p = click(t, b, "#rent-submit", "rent")
	m := regexp.MustCompile(`^/rentals/(\d+)$`).FindStringSubmatch(p.Path)
	must(t, m != nil, "renting landed on %s, want /rentals/<id>\n%s", p.Path, p)
	rentalID, _ := strconv.ParseInt(m[1], 10, 64)

	// The page follows the rental until it runs, then shows the command.
	waitFor(t, b, rentalStatusIs("running")+` && !!document.getElementById("access-command")`, "the rental to run with its SSH command")
	shown := time.Since(rented)
	must(t, textOf(t, b, "#rental-image") == dockertest.DefaultSSHDImage, "the rental page's image is %q, want %s", textOf(t, b, "#rental-image"), dockertest.DefaultSSHDImage)
	// What the copy button copies: the text of the element it names.
	cmd := eval[string](t, b, `(() => { const btn = document.getElementById("copy-access"); const el = btn && document.getElementById(btn.dataset.copy); return el ? el.textContent.trim() : ""; })()`)
	t.Logf("rental %d's page shows %q %.1fs after the rent", rentalID, cmd, shown.Seconds())
	parts := sshCommand.FindStringSubmatch(cmd)
	must(t, parts != nil, "the copied command %q is not ssh -p PORT USER@HOST\n%s", cmd, readPage(t, b))
	rentalShot(t, b, "ssh-en")
	p = readPage(t, b)
	must(t, regexp.MustCompile(`Storage ¥\d+\.\d\d a day`).MatchString(p.Text), "the rental page does not state the storage per day in yuan\n%s", p)
	// The node is simulated but the container is real: the page says so,
	// not that nothing runs.
	must(t, strings.Contains(p.Text, "Your container is real and reachable, but it has no GPU") && !strings.Contains(p.Text, "no workload really runs") &&
		!strings.Contains(p.Text, "this host does not exist"), "the rental page misdescribes a real container on simulated GPUs\n%s", p)

	var v models.Volume
	must(t, a.db.R.Raw(`SELECT v.* FROM volumes v JOIN rentals r ON r.volume_id = v.id WHERE r.id = ?`, rentalID).Scan(&v).Error == nil && v.SizeGB == 20,
		"rental %d's volume is %+v, want 20 GB", rentalID, v)

	// The command works: the renter's key logs in at its host, port and user.
	port, _ := strconv.Atoi(parts[1])
	c, err := ssh.Dial("tcp", net.JoinHostPort(parts[3], parts[1]), &ssh.ClientConfig{User: parts[2], Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		// A container's host key is new each launch: nothing to pin.
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	must(t, err == nil, "ssh %s@%s -p %d (the page's command): %v", parts[2], parts[3], port, err)
	defer c.Close()
	s, err := c.NewSession()
	must(t, err == nil, "an SSH session: %v", err)
	defer s.Close()
	out, err := s.CombinedOutput("id -un; cat /etc/debian_version; echo hello > /workspace/hello && cat /workspace/hello")
	must(t, err == nil && regexp.MustCompile(`^root\n12\.\d+\nhello\n$`).MatchString(string(out)),
		"over SSH: %q (%v), want root on Debian 12 with a writable /workspace", out, err)
	t.Logf("rent → SSH login with the page's command %.1fs; whole test %.1fs", time.Since(rented).Seconds(), time.Since(began).Seconds())
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// portBaseForNextRental is a docker launcher PortBase that puts the next
// rental of db (the one the test is about to make) on a port that is free
// now, between 30000 and the kernel's ephemeral ports (32768 up, where
// agent/docker's tests take theirs): apart from the ports of the root
// package's journey (10000–29999) and of the rentals package's docker
// test (33000–49999).
func portBaseForNextRental(t *testing.T, db *models.DB) int {
	t.Helper()
	var next int64
	q := `SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'rentals'), 0) + 1`
	if db.Dialect == "postgres" {
		// A test's own database: no rental was ever deleted.
		q = `SELECT COALESCE(MAX(id), 0) + 1 FROM rentals`
	}
	if err := db.R.Raw(q).Scan(&next).Error; err != nil {
		t.Fatal(err)
	}
	for range 50 {
		n, err := rand.Int(rand.Reader, big.NewInt(2700))
		if err != nil {
			t.Fatal(err)
		}
		port := 30000 + int(n.Int64())
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		return port - agent.SSHPort(0, next)
	}
	t.Fatal("no free port between 30000 and 32700 in 50 tries")
	return 0
}

// removeRentalContainers removes, when the test ends (after the agent has
// stopped), the containers of namespace ns and the docker volumes of the
// organisation's volumes.
func removeRentalContainers(t *testing.T, db *models.DB, cli *client.Client, ns string, orgID int64) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.Background()
		cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", "suanli-"+ns+"-"))})
		if err != nil {
			t.Errorf("listing the test's containers: %v", err)
		}
		for _, c := range cs {
			if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
				t.Errorf("removing container %v: %v", c.Names, err)
			}
		}
		var keys []string
		if err := db.R.Model(&models.Volume{}).Where("org_id = ?", orgID).Pluck("workspace_key", &keys).Error; err != nil {
			t.Errorf("the test's volumes: %v", err)
		}
		for _, k := range keys {
			if err := cli.VolumeRemove(ctx, docker.VolumeName(k, 0), true); err != nil && !cerrdefs.IsNotFound(err) {
				t.Errorf("removing volume %s: %v", k, err)
			}
		}
	})
}
