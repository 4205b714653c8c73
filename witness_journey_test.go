package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"suanli/dockertest"
)

// The witnesses on real processes and real containers: `suanli serve`
// listening where containers reach it (the Docker bridge's gateway
// address) and a simulated test provider's `suanli agent --simulate
// rtx-4090 --launcher docker`. A renter rents one GPU with the
// catalogue's debian-sshd image: the container's init runs the verifier
// at start, which finds no NVML (the node is simulated), reports the
// GPU the launcher named as simulated, and posts through the real
// endpoint with the rental's own credential; the offer's API and page
// show renter-measured runs, labelled simulated, with no figure. The
// renter runs suanli-verify again over SSH (on demand): two runs. Then
// the platform's audit (SUANLI_AUDIT_EVERY) rents the offer's other GPU
// through the ordinary renter path, its verifier posts, the rental is
// released, and the offer shows platform-audited runs.
func TestWitnessesOnRealContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real containers")
	}
	dockerHost := dockertest.Require(t)
	if img := dockertest.Image(t); img != dockertest.DefaultSSHDImage {
		t.Fatalf("the catalogue's debian-sshd image is %s, the daemon has %s", dockertest.DefaultSSHDImage, img)
	}
	cli := dockertest.Client(t)
	gw := bridgeGateway(t, cli)

	bin := buildSuanli(t)
	dir, root := t.TempDir(), t.TempDir()
	ns := testNamespace(t)
	removeNamespace(t, cli, ns)
	base, _ := freePortBases(t)
	// The server listens on the bridge's gateway address, and its base
	// URL (where launch tasks point the verifier) says so: a container
	// reaches the host there.
	srv := &suanliServer{t: t, bin: bin, dir: dir, addr: freeAddrOn(t, gw), extraEnv: []string{"SUANLI_METER_EVERY=1s", "SUANLI_AUDIT_EVERY=0"}}

	pw := filepath.Join(dir, "provider-pw")
	if err := os.WriteFile(pw, []byte("provider-pass-2026\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.admin("create-user", "--email", "ops@witness.example", "--password-file", pw, "--provider", "Witness Test GPU Co", "--simulated")
	provider := strings.TrimSpace(srv.admin("token", "--email", "ops@witness.example", "--name", "journey"))
	renter := srv.renter("renter@witness.example")
	startPlainServe(srv)

	j := &journey{t: t, srv: srv}
	var dc struct {
		ID int64 `json:"id"`
	}
	j.must(201, "POST", "/api/v1/provider/datacenters", provider,
		map[string]any{"name": "见证机房", "city": "chengdu", "district": "天府新区", "storage": "shared"}, &dc)
	var n struct {
		ID    int64  `json:"id"`
		Token string `json:"token"`
	}
	j.must(201, "POST", "/api/v1/provider/nodes", provider, map[string]any{"datacenter_id": dc.ID, "name": "witness-1"}, &n)
	j.startAgent("agent-1", n.Token, dockerHost, root, ns+"-1", base)
	j.waitNodeHealthy(provider, n.ID, 2)
	var o struct {
		ID int64 `json:"id"`
	}
	j.must(201, "POST", "/api/v1/provider/offers", provider, map[string]any{"node_id": n.ID, "gpu": "rtx-4090", "gpus": 2,
		"price_per_gpu_hour_fen": 300, "images": []string{"debian-sshd"}}, &o)

	// Nothing witnessed yet.
	if off := witnessOffer(j, o.ID); off.RenterMeasured != nil {
		t.Fatalf("renter_measured before any rental: %+v", off.RenterMeasured)
	}

	// A renter's rental: the verifier runs at the container's start.
	key, signer := dockertest.RenterKey(t, "renter@witness")
	id := j.rent(renter, map[string]any{"offer_id": o.ID, "gpus": 1, "sla": "standard", "ssh_public_key": key, "image": "debian-sshd"})
	r := j.waitRental(renter, id, "running", 2*time.Minute, func(r journeyRental) bool { return r.Status == "running" })
	var off witnessAPIOffer
	dockertest.Eventually(t, 2*time.Minute, "renter_measured after the verifier ran at start", func() (bool, string) {
		off = witnessOffer(j, o.ID)
		return off.RenterMeasured != nil && off.RenterMeasured.Runs >= 1, fmt.Sprintf("%+v", off.RenterMeasured)
	})
	if rm := off.RenterMeasured; rm.Runs != 1 || !rm.Simulated || rm.MedianBF16TFLOPS != nil || rm.LastAt.IsZero() {
		t.Fatalf("renter_measured %+v, want one simulated run without a figure", rm)
	}
	if off.PlatformAudited != nil {
		t.Errorf("platform_audited %+v before any audit", off.PlatformAudited)
	}

	// On demand, over SSH.
	if out := sshMust(t, r.ssh(t), signer, "suanli-verify 2>&1"); !strings.Contains(out, "result recorded") || !strings.Contains(out, `"simulated": true`) {
		t.Fatalf("suanli-verify over SSH said:\n%s", out)
	}
	if rm := witnessOffer(j, o.ID).RenterMeasured; rm == nil || rm.Runs != 2 || !rm.Simulated {
		t.Fatalf("after an on-demand run renter_measured is %+v, want 2 simulated runs", rm)
	}
	var list struct {
		Offers []witnessAPIOffer `json:"offers"`
	}
	j.must(200, "GET", "/api/v1/offers?gpu=rtx-4090", "", nil, &list)
	found := false
	for _, lo := range list.Offers {
		if lo.ID == o.ID {
			found = lo.RenterMeasured != nil && lo.RenterMeasured.Runs == 2 && lo.RenterMeasured.Simulated
		}
	}
	if !found {
		t.Errorf("GET /api/v1/offers does not show offer %d's renter_measured: %+v", o.ID, list.Offers)
	}
	page := offerPage(t, srv, o.ID)
	for _, want := range []string{`id="witness-renter"`, "2 次运行", "模拟"} {
		if !strings.Contains(page, want) {
			t.Errorf("the offer page lacks %q", want)
		}
	}

	// The platform's audits switched on (a pass every 2 s; the server
	// restarts with it, the agent reconnects): one rents the other GPU
	// through the renter path.
	srv.stop()
	srv.extraEnv = []string{"SUANLI_METER_EVERY=1s", "SUANLI_AUDIT_EVERY=2s"}
	startPlainServe(srv)
	dockertest.Eventually(t, 3*time.Minute, "platform_audited after an audit run", func() (bool, string) {
		off = witnessOffer(j, o.ID)
		return off.PlatformAudited != nil && off.PlatformAudited.Runs >= 1, fmt.Sprintf("%+v", off.PlatformAudited)
	})
	if pa := off.PlatformAudited; !pa.Simulated || pa.MedianBF16TFLOPS != nil {
		t.Errorf("platform_audited %+v, want simulated runs without a figure", pa)
	}
	if rm := off.RenterMeasured; rm == nil || rm.Runs != 2 {
		t.Errorf("the audit changed renter_measured: %+v", rm)
	}
	// The audit's rental is released once its result came: both GPUs are
	// free again but the renter's.
	dockertest.Eventually(t, 2*time.Minute, "the audit rental released", func() (bool, string) {
		var st struct {
			AvailableGPUs int `json:"available_gpus"`
		}
		j.must(200, "GET", fmt.Sprintf("/api/v1/offers/%d", o.ID), "", nil, &st)
		return st.AvailableGPUs == 1, fmt.Sprint(st.AvailableGPUs)
	})
	page = offerPage(t, srv, o.ID)
	if !strings.Contains(page, `id="witness-audit"`) || !strings.Contains(page, "平台抽检") {
		t.Errorf("the offer page lacks the platform-audited row")
	}
	srv.stop()
}

// witnessAPIOffer is the part of an API offer the witness journey reads.
type witnessAPIOffer struct {
	ID              int64           `json:"id"`
	RenterMeasured  *witnessFigures `json:"renter_measured"`
	PlatformAudited *witnessFigures `json:"platform_audited"`
}

type witnessFigures struct {
	Runs             int       `json:"runs"`
	MedianBF16TFLOPS *float64  `json:"median_bf16_tflops"`
	LastAt           time.Time `json:"last_at"`
	Simulated        bool      `json:"simulated"`
}

func witnessOffer(j *journey, id int64) witnessAPIOffer {
	j.t.Helper()
	var o witnessAPIOffer
	j.must(200, "GET", fmt.Sprintf("/api/v1/offers/%d", id), "", nil, &o)
	return o
}

// offerPage is the offer's public page (zh-CN, the default language).
func offerPage(t *testing.T, srv *suanliServer, id int64) string {
	t.Helper()
	res, err := http.Get(fmt.Sprintf("http://%s/offers/%d", srv.addr, id))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /offers/%d: %d %v", id, res.StatusCode, err)
	}
	return string(b)
}

// bridgeGateway is the host's address on Docker's default bridge, which
// containers on any bridge network of the daemon reach the host at.
func bridgeGateway(t *testing.T, cli *client.Client) string {
	t.Helper()
	nw, err := cli.NetworkInspect(context.Background(), "bridge", network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range nw.IPAM.Config {
		if ip := net.ParseIP(c.Gateway); ip != nil && ip.To4() != nil {
			return c.Gateway
		}
		// Docker 20.10 leaves the default bridge's gateway out: it is
		// the subnet's first address, on the host's docker0.
		if _, sub, err := net.ParseCIDR(c.Subnet); err == nil && sub.IP.To4() != nil {
			ip := sub.IP.To4()
			return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1).String()
		}
	}
	t.Fatalf("the bridge network has no IPv4 gateway: %+v", nw.IPAM)
	return ""
}

// freeAddrOn is a free TCP address on host.
func freeAddrOn(t *testing.T, host string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
