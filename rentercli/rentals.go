package rentercli

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"suanli/apiclient"
	"suanli/rentercli/sshcmd"
)

// runRentals lists the organisation's rentals (live ones first).
func runRentals(a *app, args []string) error {
	fs := a.flags()
	all := fs.Bool("all", false, a.T("cli.flag.all"))
	var labels multiFlag
	fs.Var(&labels, "label", a.T("cli.flag.label_filter"))
	name := fs.String("name", "", a.T("cli.flag.name_filter"))
	org := fs.Int("org", 0, a.T("cli.flag.org"))
	page := fs.Int("page", 0, a.T("cli.flag.page"))
	asJSON := fs.Bool("json", false, a.T("cli.flag.json"))
	pos, _, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return a.usageErr("cli.err.extra_args", strings.Join(pos, " "))
	}
	c, _, err := a.login()
	if err != nil {
		return err
	}
	p := apiclient.ListRentalsParams{PerPage: ptr(apiclient.PerPage(100))}
	if *org > 0 {
		p.OrgId = ptr(apiclient.OrgId(*org))
	}
	if *page > 0 {
		p.Page = ptr(apiclient.Page(*page))
	}
	if len(labels) > 0 {
		if _, err := keyValues("label", labels); err != nil {
			return &cliError{code: ExitUsage, msg: err.Error()}
		}
		p.Label = ptr([]string(labels))
	}
	if *name != "" {
		p.Name = name
	}
	res, err := c.ListRentalsWithResponse(a.ctx, &p)
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(a.stdout, res.Body)
	}
	t := newTable(a.T("cli.col.id"), a.T("cli.col.name"), a.T("cli.col.status"), a.T("cli.col.gpu"), a.T("cli.col.image"), a.T("cli.col.ssh"),
		">"+a.T("cli.col.rate"), ">"+a.T("cli.col.cost"), a.T("cli.col.created"))
	shown := 0
	for _, r := range res.JSON200.Rentals {
		if !*all && r.State == apiclient.RentalStateReleased {
			continue
		}
		shown++
		ssh := "—"
		if acc := sshOf(&r); acc != nil {
			ssh = fmt.Sprintf("%s:%d", acc.Host, acc.Port)
		}
		name := r.Name
		if name == "" {
			name = "—"
		}
		image := "—"
		if r.Image != nil && *r.Image != "" {
			image = *r.Image
		}
		t.add(strconv.Itoa(r.Id), name, a.stateWord(string(r.State)), fmt.Sprintf("%d × %s", r.Gpus, r.GpuModel), image, ssh,
			yuan(int64(r.RateFenPerHour)), yuan(int64(r.CostSoFarFen)), shTime(r.CreatedAt))
	}
	if shown == 0 {
		fmt.Fprintln(a.stdout, a.T("cli.rentals.none"))
		return nil
	}
	return t.write(a.stdout)
}

// rentalArg reads a RENTAL argument: a rental's id, or its name. A name
// is looked up with the API's name filter in the organisation org, or
// without one in each of the caller's organisations (those whose
// rentals the caller may not see are passed over), every page: the one
// live rental of that name, else the newest of that name; several live
// ones are a usage error listing their ids.
func (a *app) rentalArg(c *apiclient.ClientWithResponses, pos []string, org int) (int, error) {
	if len(pos) != 1 {
		return 0, a.usageErr("cli.err.rental_arg")
	}
	arg := strings.TrimPrefix(pos[0], "#")
	if id, err := strconv.Atoi(arg); err == nil {
		if id < 1 {
			return 0, a.usageErr("cli.err.rental_id", pos[0])
		}
		return id, nil
	}
	orgs := []int{org}
	if org <= 0 {
		me, err := c.GetMeWithResponse(a.ctx)
		if err := a.answer(err, me, http.StatusOK); err != nil {
			return 0, err
		}
		orgs = orgs[:0]
		for _, o := range me.JSON200.Orgs {
			orgs = append(orgs, o.Id)
		}
	}
	var named []apiclient.Rental
	for _, o := range orgs {
		rs, err := a.rentalsNamed(c, arg, o, org > 0)
		if err != nil {
			return 0, err
		}
		named = append(named, rs...)
	}
	var live []string
	var newest *apiclient.Rental
	for i, r := range named {
		if r.State != apiclient.RentalStateReleased && r.State != apiclient.RentalStateFailed {
			live = append(live, strconv.Itoa(r.Id))
		}
		if newest == nil || r.CreatedAt.After(newest.CreatedAt) {
			newest = &named[i]
		}
	}
	switch {
	case len(live) == 1:
		id, _ := strconv.Atoi(live[0])
		return id, nil
	case len(live) > 1:
		return 0, a.usageErr("cli.err.rental_name_many", arg, strings.Join(live, ", "))
	case newest != nil:
		return newest.Id, nil // none live: the newest, ended
	}
	return 0, a.errorf(ExitNotFound, "cli.err.rental_name_none", arg)
}

// rentalsNamed is every rental named name in the organisation org, all
// pages. An organisation whose rentals the caller may not see (403, 404)
// has none for it, unless it was asked for (explicit): then that is the
// error.
func (a *app) rentalsNamed(c *apiclient.ClientWithResponses, name string, org int, explicit bool) ([]apiclient.Rental, error) {
	const perPage = 200 // the API's most
	var out []apiclient.Rental
	for page := 1; ; page++ {
		p := apiclient.ListRentalsParams{Name: &name, Page: ptr(apiclient.Page(page)), PerPage: ptr(apiclient.PerPage(perPage))}
		if org > 0 {
			p.OrgId = ptr(apiclient.OrgId(org))
		}
		res, err := c.ListRentalsWithResponse(a.ctx, &p)
		if err := a.answer(err, res, http.StatusOK); err != nil {
			var ae *apiError
			if !explicit && errors.As(err, &ae) && (ae.status == http.StatusForbidden || ae.status == http.StatusNotFound) {
				return nil, nil
			}
			return nil, err
		}
		out = append(out, res.JSON200.Rentals...)
		if len(res.JSON200.Rentals) == 0 || page*perPage >= res.JSON200.Total {
			return out, nil
		}
	}
}

// runStop stops a rental (POST …/stop: GPU billing ends, the volume is
// kept) and, unless --no-wait, waits until it is stopped.
func runStop(a *app, args []string) error {
	fs := a.flags()
	org := fs.Int("org", 0, a.T("cli.flag.org_lookup"))
	noWait := fs.Bool("no-wait", false, a.T("cli.flag.no_wait"))
	timeout := fs.Duration("timeout", 5*time.Minute, a.T("cli.flag.timeout"))
	asJSON := fs.Bool("json", false, a.T("cli.flag.json"))
	pos, _, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	c, _, err := a.login()
	if err != nil {
		return err
	}
	id, err := a.rentalArg(c, pos, *org)
	if err != nil {
		return err
	}
	res, err := c.StopRentalWithResponse(a.ctx, apiclient.Id(id))
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	r, body := res.JSON200, res.Body
	if !*noWait {
		if r, body, err = a.waitStatus(c, id, *timeout, apiclient.RentalStateStopped, apiclient.RentalStateReleased); err != nil {
			return err
		}
	}
	if *asJSON {
		return printJSON(a.stdout, body)
	}
	fmt.Fprintln(a.stdout, a.T("cli.stop.done", id, a.stateWord(string(r.State))))
	if r.Volume != nil && r.Volume.DeleteAfter != nil {
		fmt.Fprintln(a.stdout, a.T("cli.stop.volume_kept", r.Volume.Id, shTime(*r.Volume.DeleteAfter)))
	}
	return nil
}

// runStart starts a stopped rental again (POST …/start), optionally in
// no-GPU mode or with another volume, and waits until it runs.
func runStart(a *app, args []string) error {
	fs := a.flags()
	org := fs.Int("org", 0, a.T("cli.flag.org_lookup"))
	noGPU := fs.Bool("no-gpu", false, a.T("cli.flag.no_gpu"))
	volume := fs.Int("volume", 0, a.T("cli.flag.start_volume"))
	noWait := fs.Bool("no-wait", false, a.T("cli.flag.no_wait"))
	timeout := fs.Duration("timeout", 15*time.Minute, a.T("cli.flag.timeout"))
	asJSON := fs.Bool("json", false, a.T("cli.flag.json"))
	pos, _, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	c, s, err := a.login()
	if err != nil {
		return err
	}
	id, err := a.rentalArg(c, pos, *org)
	if err != nil {
		return err
	}
	body := apiclient.StartRequest{}
	if *noGPU {
		body.NoGpu = noGPU
	}
	if *volume > 0 {
		body.VolumeId = volume
	}
	res, err := c.StartRentalWithResponse(a.ctx, apiclient.Id(id), body)
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	if *noWait {
		if *asJSON {
			return printJSON(a.stdout, res.Body)
		}
		fmt.Fprintln(a.stdout, a.T("cli.start.no_wait", id, a.stateWord(string(res.JSON200.State))))
		return nil
	}
	return a.waitAndShow(c, id, *timeout, *asJSON, a.rentalKey(s, id, ""))
}

// runRelease releases a rental for good (POST …/release), with its
// volume when --delete-volume.
func runRelease(a *app, args []string) error {
	fs := a.flags()
	org := fs.Int("org", 0, a.T("cli.flag.org_lookup"))
	deleteVolume := fs.Bool("delete-volume", false, a.T("cli.flag.delete_volume"))
	noWait := fs.Bool("no-wait", false, a.T("cli.flag.no_wait"))
	timeout := fs.Duration("timeout", 5*time.Minute, a.T("cli.flag.timeout"))
	asJSON := fs.Bool("json", false, a.T("cli.flag.json"))
	pos, _, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	c, _, err := a.login()
	if err != nil {
		return err
	}
	id, err := a.rentalArg(c, pos, *org)
	if err != nil {
		return err
	}
	body := apiclient.ReleaseRequest{}
	if *deleteVolume {
		body.DeleteVolume = deleteVolume
	}
	res, err := c.ReleaseRentalWithResponse(a.ctx, apiclient.Id(id), body)
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	r, raw := res.JSON200, res.Body
	if !*noWait {
		if r, raw, err = a.waitStatus(c, id, *timeout, apiclient.RentalStateReleased); err != nil {
			return err
		}
	}
	if *asJSON {
		return printJSON(a.stdout, raw)
	}
	fmt.Fprintln(a.stdout, a.T("cli.release.done", id, a.stateWord(string(r.State))))
	if r.Volume != nil {
		if *deleteVolume {
			fmt.Fprintln(a.stdout, a.T("cli.release.volume_deleted", r.Volume.Id))
		} else {
			fmt.Fprintln(a.stdout, a.T("cli.release.volume_kept", r.Volume.Id))
		}
	}
	return nil
}

// waitStatus reads the rental every pollEvery until its status is one of
// want (a stop or a release taking effect on the node).
func (a *app) waitStatus(c *apiclient.ClientWithResponses, id int, timeout time.Duration, want ...apiclient.RentalState) (*apiclient.Rental, []byte, error) {
	p := newProgress(a.stderr, isTerminal(a.stderr))
	defer p.done()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(a.pollEvery)
	defer tick.Stop()
	for {
		res, err := c.GetRentalWithResponse(a.ctx, apiclient.Id(id))
		if err := a.answer(err, res, http.StatusOK); err != nil {
			return nil, nil, err
		}
		r := res.JSON200
		for _, w := range want {
			if r.State == w {
				return r, res.Body, nil
			}
		}
		if r.State == apiclient.RentalStateFailed {
			return r, res.Body, a.errorf(ExitRentalFailed, "cli.err.rental_failed", id, failureOf(r))
		}
		p.show(a.progressLine(r))
		if time.Now().After(deadline) {
			return r, res.Body, a.errorf(ExitError, "cli.err.wait_timeout", id, timeout, a.stateWord(string(r.State)))
		}
		select {
		case <-a.ctx.Done():
			return nil, nil, a.errorf(ExitInterrupted, "cli.err.wait_interrupted", id)
		case <-tick.C:
		}
	}
}

// rentalKey is the key to log in to a rental with: --ssh-key, else the
// one it was rented with from this machine, else the default key. The
// private half may be missing (ssh then offers what it has).
func (a *app) rentalKey(s settings, id int, flagPath string) sshKey {
	path := flagPath
	if path == "" {
		path = s.file.RentalKeys[strconv.Itoa(id)]
	}
	if k, err := a.findKey(path); err == nil {
		return k
	}
	if path != "" && !strings.HasSuffix(path, ".pub") {
		return sshKey{privPath: path}
	}
	return sshKey{}
}

// runSSH logs in to a running rental with the system ssh: its host and
// port from the API, the key it was rented with, host keys checked
// against the CLI's own known_hosts; a remote command after "--" runs
// there and its exit status is the command's.
func runSSH(a *app, args []string) error {
	fs := a.flags()
	org := fs.Int("org", 0, a.T("cli.flag.org_lookup"))
	keyPath := fs.String("ssh-key", "", a.T("cli.flag.ssh_key_login"))
	pos, remote, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	c, s, err := a.login()
	if err != nil {
		return err
	}
	id, err := a.rentalArg(c, pos, *org)
	if err != nil {
		return err
	}
	res, err := c.GetRentalWithResponse(a.ctx, apiclient.Id(id))
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	r := res.JSON200
	acc := sshOf(r)
	if acc == nil || r.State != apiclient.RentalStateRunning {
		return a.errorf(ExitConflict, "cli.err.no_access", id, a.stateWord(string(r.State)))
	}
	if r.Access != nil && r.Access.Simulated && (r.Access.Container == nil || !*r.Access.Container) {
		return a.errorf(ExitConflict, "cli.err.simulated_access", id)
	}
	if err := ensurePrivateDir(s.dir); err != nil {
		return err
	}
	key := a.rentalKey(s, id, *keyPath)
	t := sshcmd.Target{Host: acc.Host, Port: acc.Port, User: acc.User, Alias: sshcmd.HostKeyAlias(int64(id), acc.Host, acc.Port, launchMark(r))}
	if err := sshcmd.CheckTarget(t); err != nil {
		return a.errorf(ExitError, "cli.err.ssh_target", id, err)
	}
	// Absolute paths: ssh would read a relative one against its own
	// working directory, and a leading ~ as a home.
	knownHosts, err := filepath.Abs(filepath.Join(s.dir, knownHostsName))
	if err != nil {
		return err
	}
	identity := key.privPath
	if identity != "" {
		if identity, err = filepath.Abs(identity); err != nil {
			return err
		}
	}
	for _, p := range []string{knownHosts, identity} {
		if err := sshcmd.CheckPath(p); err != nil {
			return a.errorf(ExitUsage, "cli.err.ssh_path", err)
		}
	}
	return a.runSSHProgram(sshcmd.Args(t, identity, knownHosts, remote))
}

// launchMark tells one launch of a rental from the next (each has new
// host keys): the time of its latest launch event (running,
// running_no_gpu, migrated: provisioning's record of each launch), in
// Unix seconds.
func launchMark(r *apiclient.Rental) string {
	var at time.Time
	for _, e := range r.Events {
		if (strings.HasPrefix(e.Kind, "running") || e.Kind == "migrated") && e.At.After(at) {
			at = e.At
		}
	}
	if at.IsZero() {
		return ""
	}
	return strconv.FormatInt(at.Unix(), 10)
}
