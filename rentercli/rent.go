package rentercli

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"suanli/apiclient"
	"suanli/rentercli/sshcmd"
)

// runRent rents GPUs of an offer (POST /api/v1/rentals, with an
// Idempotency-Key) and, unless --no-wait, waits until the rental runs
// (or fails), showing where it is, then prints how to log in.
func runRent(a *app, args []string) error {
	fs := a.flags()
	gpus := fs.Int("gpus", 1, a.T("cli.flag.gpus"))
	image := fs.String("image", "", a.T("cli.flag.image"))
	volume := fs.Int("volume", 0, a.T("cli.flag.volume"))
	volumeGB := fs.Int("volume-gb", 0, a.T("cli.flag.volume_gb"))
	bid := fs.String("bid", "", a.T("cli.flag.bid"))
	var ports, labels, envs, excluded multiFlag
	fs.Var(&ports, "port", a.T("cli.flag.port"))
	keyPath := fs.String("ssh-key", "", a.T("cli.flag.ssh_key"))
	name := fs.String("name", "", a.T("cli.flag.name"))
	fs.Var(&labels, "label", a.T("cli.flag.label"))
	fs.Var(&envs, "env", a.T("cli.flag.env"))
	onstart := fs.String("onstart", "", a.T("cli.flag.onstart"))
	region := fs.String("region", "", a.T("cli.flag.type_region"))
	city := fs.String("city", "", a.T("cli.flag.type_city"))
	maxPrice := fs.String("max-price", "", a.T("cli.flag.type_max_price"))
	fs.Var(&excluded, "exclude-node", a.T("cli.flag.exclude_node"))
	sla := fs.String("sla", "", a.T("cli.flag.sla"))
	org := fs.Int("org", 0, a.T("cli.flag.org"))
	noWait := fs.Bool("no-wait", false, a.T("cli.flag.no_wait"))
	timeout := fs.Duration("timeout", 15*time.Minute, a.T("cli.flag.timeout"))
	asJSON := fs.Bool("json", false, a.T("cli.flag.json"))
	pos, _, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return a.usageErr("cli.err.rent_offer")
	}
	if *volume > 0 && *volumeGB > 0 {
		return a.usageErr("cli.err.volume_both")
	}
	if *gpus < 1 {
		return a.usageErr("cli.err.gpus")
	}
	gpusGiven := false
	fs.Visit(func(f *flag.Flag) { gpusGiven = gpusGiven || f.Name == "gpus" })
	req := apiclient.RentalRequest{}
	if offerID, err := strconv.Atoi(pos[0]); err == nil && offerID > 0 {
		// An offer: the type's filters do not apply.
		if *region != "" || *city != "" || *maxPrice != "" || len(excluded) > 0 {
			return a.usageErr("cli.err.type_flags")
		}
		req.OfferId, req.Gpus = &offerID, gpus
	} else {
		if !instanceTypeRe.MatchString(pos[0]) {
			return a.usageErr("cli.err.offer_id", pos[0])
		}
		// An instance type: its N is the GPUs (send --gpus only when
		// given, for the server to check).
		req.InstanceType = &pos[0]
		if gpusGiven {
			req.Gpus = gpus
		}
		if *region != "" {
			req.Region = region
		}
		if *city != "" {
			req.City = city
		}
		if *maxPrice != "" {
			fen, ok := parseYuan(*maxPrice)
			if !ok || fen < 1 {
				return a.usageErr("cli.err.max_price", *maxPrice)
			}
			req.MaxPriceFen = ptr(int(fen))
		}
		if len(excluded) > 0 {
			nodes := make([]int, 0, len(excluded))
			for _, x := range excluded {
				n, err := strconv.Atoi(x)
				if err != nil || n < 1 {
					return a.usageErr("cli.err.exclude_node", x)
				}
				nodes = append(nodes, n)
			}
			req.ExcludeNodes = &nodes
		}
	}
	if *image != "" {
		req.Image = image
	}
	if *volume > 0 {
		req.VolumeId = volume
	}
	if *volumeGB > 0 {
		req.VolumeGb = volumeGB
	}
	if *bid != "" {
		fen, ok := parseYuan(*bid)
		if !ok {
			return a.usageErr("cli.err.bid", *bid)
		}
		req.Term = ptr(apiclient.RentalRequestTermInterruptible)
		req.BidPerGpuHourFen = ptr(int(fen))
	}
	if len(ports) > 0 {
		ps := make([]int, 0, len(ports))
		for _, p := range ports {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return a.usageErr("cli.err.port", p)
			}
			ps = append(ps, n)
		}
		req.Ports = &ps
	}
	if *name != "" {
		req.Name = name
	}
	if m, err := keyValues("label", labels); err != nil {
		return &cliError{code: ExitUsage, msg: err.Error()}
	} else if m != nil {
		req.Labels = &m
	}
	if m, err := keyValues("env", envs); err != nil {
		return &cliError{code: ExitUsage, msg: err.Error()}
	} else if m != nil {
		req.Env = &m
	}
	if *onstart != "" {
		b, err := os.ReadFile(*onstart)
		if err != nil {
			return a.usageErr("cli.err.onstart", *onstart, err)
		}
		req.Onstart = ptr(string(b))
	}
	if *sla != "" {
		req.Sla = sla
	}
	if *org > 0 {
		req.OrgId = org
	}
	key, err := a.findKey(*keyPath)
	if err != nil {
		return err
	}
	req.SshPublicKey = &key.pub

	c, s, err := a.login()
	if err != nil {
		return err
	}
	// One key for this rent: the doer's retries after a timeout send it
	// again, and the server answers them with the first answer instead of
	// renting twice.
	idem := apiclient.IdempotencyKey(newIdempotencyKey())
	res, err := c.CreateRentalWithResponse(a.ctx, &apiclient.CreateRentalParams{IdempotencyKey: &idem}, req)
	if err := a.answer(err, res, http.StatusCreated); err != nil {
		return err
	}
	r := res.JSON201
	if r == nil {
		return a.errorf(ExitError, "cli.err.unexpected", "POST /api/v1/rentals")
	}
	if err := rememberKey(s.dir, int64(r.Id), key.pubPath); err != nil {
		fmt.Fprintln(a.stderr, a.T("cli.rent.key_not_saved", err))
	}
	fmt.Fprintln(a.stderr, a.T("cli.rent.created", r.Id, r.OfferId, a.stateWord(string(r.State))))
	if *noWait {
		if *asJSON {
			return printJSON(a.stdout, res.Body)
		}
		fmt.Fprintln(a.stdout, a.T("cli.rent.no_wait", r.Id))
		return nil
	}
	return a.waitAndShow(c, r.Id, *timeout, *asJSON, key)
}

// instanceTypeRe is an instance type's shape: <gpu slug>.<N>x.
var instanceTypeRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*\.[1-9][0-9]*x$`)

// waitAndShow waits until the rental runs and prints how to log in (or
// its JSON); a rental that fails meanwhile is exit 9.
func (a *app) waitAndShow(c *apiclient.ClientWithResponses, id int, timeout time.Duration, asJSON bool, key sshKey) error {
	r, body, err := a.waitRunning(c, id, timeout)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(a.stdout, body)
	}
	a.printAccess(r, key)
	return nil
}

// printAccess prints a running rental's headline and its ssh command.
func (a *app) printAccess(r *apiclient.Rental, key sshKey) {
	fmt.Fprintln(a.stdout, a.T("cli.rent.running", r.Id, r.Gpus, r.GpuModel, yuan(int64(r.RateFenPerHour))))
	if r.Node != nil {
		fmt.Fprintln(a.stdout, a.T("cli.rent.node", r.Node.Name, r.Node.Id, r.OfferId))
	}
	if r.Checks != nil {
		fmt.Fprintln(a.stdout, a.T("cli.rent.checks", r.Checks.Passed, r.Checks.Total))
	}
	// Simulated data says so wherever it is shown: a simulated agent's
	// GPUs are simulated devices, and without a container its ssh
	// address leads nowhere.
	if r.Access != nil && r.Access.Simulated {
		if r.Access.Container != nil && *r.Access.Container {
			fmt.Fprintln(a.stdout, a.T("cli.rent.simulated_container"))
		} else {
			fmt.Fprintln(a.stdout, a.T("cli.rent.simulated"))
		}
	}
	acc := sshOf(r)
	if acc == nil {
		return
	}
	// Only a target ssh may be given (suanli ssh refuses the rest).
	if sshcmd.CheckTarget(sshcmd.Target{Host: acc.Host, Port: acc.Port, User: acc.User}) != nil {
		return
	}
	cmd := fmt.Sprintf("ssh -p %d %s@%s", acc.Port, acc.User, acc.Host)
	if key.privPath != "" && !a.isDefaultKey(key) {
		cmd = fmt.Sprintf("ssh -i %s -p %d %s@%s", sshcmd.ShellWord(key.privPath), acc.Port, acc.User, acc.Host)
	}
	fmt.Fprintln(a.stdout, a.T("cli.rent.ssh", cmd, r.Id))
}

// isDefaultKey reports whether ssh itself would offer the key (one of
// ~/.ssh/id_ed25519 and ~/.ssh/id_rsa).
func (a *app) isDefaultKey(k sshKey) bool {
	for _, n := range defaultKeyNames {
		if k.pubPath == a.env["HOME"]+"/.ssh/"+n {
			return true
		}
	}
	return false
}

// newIdempotencyKey is 128 random bits in hex.
func newIdempotencyKey() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on the systems Go supports.
		panic(err)
	}
	return "cli-" + hex.EncodeToString(b)
}

var yuanRe = regexp.MustCompile(`^[0-9]{1,7}(\.[0-9]{1,2})?$`)

// parseYuan reads a yuan amount (12, 12.5, ¥12.50) into fen without
// floating point. It copies pricing.ParseYuan deliberately (plus the
// optional ¥), so the CLI takes what the web forms take: rentercli may
// import only apiclient and locales (architecture_test.go), so keep the
// two in step.
func parseYuan(s string) (int64, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "¥")
	if !yuanRe.MatchString(s) {
		return 0, false
	}
	whole, frac, _ := strings.Cut(s, ".")
	w, _ := strconv.ParseInt(whole, 10, 64)
	for len(frac) < 2 {
		frac += "0"
	}
	f, _ := strconv.ParseInt(frac, 10, 64)
	return w*100 + f, true
}

// sshOf is where a rental is reached by SSH: its ssh field (set while it
// runs), else access.ssh; nil when neither is.
func sshOf(r *apiclient.Rental) *apiclient.SSHAccess {
	if r.Ssh != nil && r.Ssh.Port != 0 {
		return r.Ssh
	}
	if r.Access != nil && r.Access.Ssh.Port != 0 {
		return &r.Access.Ssh
	}
	return nil
}
