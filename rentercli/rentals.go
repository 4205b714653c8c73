package rentercli

import (
	"errors"
	"flag"
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
	if err := a.parseNoArgs(fs, args); err != nil {
		return err
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
	// The table is one page: say how many there are in all and which page
	// this is, so that a long list does not end silently at 100.
	list := res.JSON200
	pages := 1
	if list.PerPage > 0 && list.Total > list.PerPage {
		pages = (list.Total + list.PerPage - 1) / list.PerPage
	}
	if shown == 0 {
		fmt.Fprintln(a.stdout, a.T("cli.rentals.none"))
		return nil
	}
	if err := t.write(a.stdout); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, a.T("cli.rentals.count", list.Total, list.Page, pages))
	return nil
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

// rentalCmd is what stop, start and release share: the rental they act
// on, found with --org, and their flags --no-wait, --timeout and --json.
type rentalCmd struct {
	c       *apiclient.ClientWithResponses
	s       settings
	id      int
	noWait  bool
	timeout time.Duration
	asJSON  bool
}

// rentalCommand adds the shared flags to fs (which holds the command's
// own; the wait is timeout unless --timeout), parses args, logs in and
// reads the RENTAL argument.
func (a *app) rentalCommand(fs *flag.FlagSet, args []string, timeout time.Duration) (rentalCmd, error) {
	org := fs.Int("org", 0, a.T("cli.flag.org_lookup"))
	noWait := fs.Bool("no-wait", false, a.T("cli.flag.no_wait"))
	wait := fs.Duration("timeout", timeout, a.T("cli.flag.timeout"))
	asJSON := fs.Bool("json", false, a.T("cli.flag.json"))
	pos, _, err := a.parse(fs, args)
	if err != nil {
		return rentalCmd{}, err
	}
	rc := rentalCmd{noWait: *noWait, timeout: *wait, asJSON: *asJSON}
	if rc.c, rc.s, err = a.login(); err != nil {
		return rc, err
	}
	rc.id, err = a.rentalArg(rc.c, pos, *org)
	return rc, err
}

// settle waits, unless --no-wait, until the rental r (as the action
// answered it, with its body) is in one of want, then shows it: the body
// with --json, else say's words.
func (a *app) settle(rc rentalCmd, r *apiclient.Rental, body []byte, say func(*apiclient.Rental), want ...apiclient.RentalState) error {
	if !rc.noWait {
		var err error
		if r, body, err = a.waitStatus(rc.c, rc.id, rc.timeout, want...); err != nil {
			return err
		}
	}
	if rc.asJSON {
		return printJSON(a.stdout, body)
	}
	say(r)
	return nil
}

// runStop stops a rental (POST …/stop: GPU billing ends, the volume is
// kept) and, unless --no-wait, waits until it is stopped.
func runStop(a *app, args []string) error {
	rc, err := a.rentalCommand(a.flags(), args, 5*time.Minute)
	if err != nil {
		return err
	}
	res, err := rc.c.StopRentalWithResponse(a.ctx, apiclient.Id(rc.id))
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	return a.settle(rc, res.JSON200, res.Body, func(r *apiclient.Rental) {
		fmt.Fprintln(a.stdout, a.T("cli.stop.done", rc.id, a.stateWord(string(r.State))))
		if r.Volume != nil && r.Volume.DeleteAfter != nil {
			fmt.Fprintln(a.stdout, a.T("cli.stop.volume_kept", r.Volume.Id, shTime(*r.Volume.DeleteAfter)))
		}
	}, apiclient.RentalStateStopped, apiclient.RentalStateReleased)
}

// runStart starts a stopped rental again (POST …/start), optionally in
// no-GPU mode or with another volume, and waits until it runs.
func runStart(a *app, args []string) error {
	fs := a.flags()
	noGPU := fs.Bool("no-gpu", false, a.T("cli.flag.no_gpu"))
	volume := fs.Int("volume", 0, a.T("cli.flag.start_volume"))
	rc, err := a.rentalCommand(fs, args, 15*time.Minute)
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
	res, err := rc.c.StartRentalWithResponse(a.ctx, apiclient.Id(rc.id), body)
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	if rc.noWait {
		if rc.asJSON {
			return printJSON(a.stdout, res.Body)
		}
		fmt.Fprintln(a.stdout, a.T("cli.start.no_wait", rc.id, a.stateWord(string(res.JSON200.State))))
		return nil
	}
	return a.waitAndShow(rc.c, rc.id, rc.timeout, rc.asJSON, a.rentalKey(rc.s, rc.id, ""))
}

// runRelease releases a rental for good (POST …/release), with its
// volume when --delete-volume.
func runRelease(a *app, args []string) error {
	fs := a.flags()
	deleteVolume := fs.Bool("delete-volume", false, a.T("cli.flag.delete_volume"))
	rc, err := a.rentalCommand(fs, args, 5*time.Minute)
	if err != nil {
		return err
	}
	body := apiclient.ReleaseRequest{}
	if *deleteVolume {
		body.DeleteVolume = deleteVolume
	}
	res, err := rc.c.ReleaseRentalWithResponse(a.ctx, apiclient.Id(rc.id), body)
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	return a.settle(rc, res.JSON200, res.Body, func(r *apiclient.Rental) {
		fmt.Fprintln(a.stdout, a.T("cli.release.done", rc.id, a.stateWord(string(r.State))))
		if r.Volume != nil {
			if *deleteVolume {
				fmt.Fprintln(a.stdout, a.T("cli.release.volume_deleted", r.Volume.Id))
			} else {
				fmt.Fprintln(a.stdout, a.T("cli.release.volume_kept", r.Volume.Id))
			}
		}
	}, apiclient.RentalStateReleased)
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
