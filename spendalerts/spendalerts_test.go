package spendalerts_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/apperr"
	"suanli/billing"
	"suanli/dbtest"
	"suanli/demo"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/listing"
	"suanli/models/rentalstore"
	"suanli/pricing"
	"suanli/spendalerts"
)

// fixture is a database with a clock the test moves, and the alerts on it.
type fixture struct {
	t   *testing.T
	db  *models.DB
	svc *spendalerts.Service
	now time.Time
}

func newFixture(t *testing.T, db *models.DB) *fixture {
	// Tuesday 2026-12-15 12:00 in Shanghai: peak hours, no off-peak discount.
	f := &fixture{t: t, db: db, now: time.Date(2026, 12, 15, 4, 0, 0, 0, time.UTC)}
	db.Now = func() time.Time { return f.now }
	f.svc = &spendalerts.Service{DB: db, Accounts: &accounts.Service{DB: db}, BaseURL: "http://suanli.test"}
	return f
}

func (f *fixture) tx(fn func(tx *gorm.DB) error) {
	f.t.Helper()
	if err := f.db.Tx(context.Background(), fn); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) user(email, lang string) *models.User {
	f.t.Helper()
	u := &models.User{Email: email, Name: strings.Split(email, "@")[0], Lang: lang, PasswordHash: "x", CreatedAt: f.now}
	f.tx(func(tx *gorm.DB) error { return models.InsertUser(tx, u) })
	return u
}

// org creates an organisation with the limits and members (user, role).
func (f *fixture) org(kind string, budget, memberCap, hourly *int64, members ...any) *models.Org {
	f.t.Helper()
	o := &models.Org{Kind: kind, Name: "Org " + kind, Status: models.OrgApproved, MonthlyBudgetFen: budget, MemberCapFen: memberCap,
		HourlyCapFen: hourly, CreatedAt: f.now}
	f.tx(func(tx *gorm.DB) error {
		if err := models.InsertOrg(tx, o); err != nil {
			return err
		}
		for i := 0; i+1 < len(members); i += 2 {
			if err := models.AddMember(tx, &models.Membership{OrgID: o.ID, UserID: members[i].(*models.User).ID, Role: members[i+1].(string), CreatedAt: f.now}); err != nil {
				return err
			}
		}
		return nil
	})
	return o
}

func (f *fixture) setLimits(o *models.Org, budget, memberCap *int64) {
	f.t.Helper()
	f.tx(func(tx *gorm.DB) error { return models.SetLabBudget(tx, o.ID, budget, memberCap) })
	o.MonthlyBudgetFen, o.MemberCapFen = budget, memberCap
}

func (f *fixture) credit(o *models.Org, fen int64) {
	f.t.Helper()
	f.tx(func(tx *gorm.DB) error {
		return billing.CreditPromo(tx, o.ID, fen, "promo_credit", "test", nil, nil, f.now)
	})
}

// charge posts a charge of fen by the member a minute ago.
func (f *fixture) charge(o *models.Org, u *models.User, fen int64) {
	f.t.Helper()
	f.tx(func(tx *gorm.DB) error {
		return ledger.Post(tx, &ledger.LedgerTxn{Kind: billing.ChargeKind, CreatedBy: &u.ID, CreatedAt: f.now.Add(-time.Minute)},
			ledger.Leg{Kind: ledger.AccWallet, OrgID: o.ID, AmountFen: -fen},
			ledger.Leg{Kind: ledger.AccPlatformRevenue, AmountFen: fen})
	})
}

// pass runs a pass and returns how many alerts it mailed.
func (f *fixture) pass() int {
	f.t.Helper()
	res, err := f.svc.Pass(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return res.Mailed
}

// mails returns the messages to the address, newest first.
func (f *fixture) mails(to string) []models.OutboxMail {
	f.t.Helper()
	ms, err := f.db.Outbox(context.Background(), to, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	return ms
}

func i64(n int64) *int64 { return &n }

// mailedOnce checks that each address got exactly n more mails since
// before (counts by address), and that the newest has the subject part.
func (f *fixture) mailed(before map[string]int, n int, subject string, to ...*models.User) {
	f.t.Helper()
	for _, u := range to {
		ms := f.mails(u.Email)
		if got := len(ms) - before[u.Email]; got != n {
			f.t.Errorf("%s got %d new mails, want %d", u.Email, got, n)
			continue
		}
		if n > 0 && !strings.Contains(ms[0].Subject, subject) {
			f.t.Errorf("%s: newest mail %q, want it to contain %q", u.Email, ms[0].Subject, subject)
		}
	}
}

func (f *fixture) counts(us ...*models.User) map[string]int {
	out := map[string]int{}
	for _, u := range us {
		out[u.Email] = len(f.mails(u.Email))
	}
	return out
}

// A lab's budget and cap per member: each threshold is mailed once per
// month and limit, the highest when the use jumps past several; a member's
// cap goes to the member and the admins, the budget's to the admins; a
// second pass mails nothing; a new month and a changed limit arm them again.
func TestLimitAlertsOncePerThresholdAndPeriod(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		owner, admin := f.user("owner@lab.example", locales.ZH), f.user("admin@lab.example", locales.EN)
		ming, hua := f.user("ming@lab.example", locales.EN), f.user("hua@lab.example", locales.ZH)
		lab := f.org(models.OrgLab, i64(100_000), i64(30_000), nil, owner, models.RoleOwner, admin, models.RoleAdmin, ming, models.RoleMember, hua, models.RoleMember)
		f.credit(lab, 1_000_000)
		all := []*models.User{owner, admin, ming, hua}

		must(t, f.pass() == 0, "a pass before any spending mailed")
		b := f.counts(all...)
		f.charge(lab, ming, 16_000) // Ming: 53 % of the cap; the lab: 16 % of the budget
		must(t, f.pass() == 1, "Ming past 50 %% of the cap: one alert")
		f.mailed(b, 1, "53%", owner, admin, ming)
		f.mailed(b, 0, "", hua)
		en := f.mails(ming.Email)[0]
		must(t, en.Lang == locales.EN && strings.Contains(en.Subject, "ming has used 53% of the monthly cap per member of Org lab") &&
			strings.Contains(en.Body, "¥160 of Org lab's monthly cap per member of ¥300 in 2026-12") && strings.Contains(en.Body, "past the 50% alert") &&
			strings.Contains(en.Body, "(50%, 80%, 100%)") && strings.Contains(en.Body, "http://suanli.test/orgs/"+fmt.Sprint(lab.ID)+"/wallet#alerts"),
			"the member's mail: %q\n%s", en.Subject, en.Body)
		zh := f.mails(owner.Email)[0]
		must(t, zh.Lang == locales.ZH && strings.Contains(zh.Subject, "成员上限的 53%") && strings.Contains(zh.Body, "超过 50% 提醒线"), "the owner's mail in Chinese: %q\n%s", zh.Subject, zh.Body)

		b = f.counts(all...)
		must(t, f.pass() == 0, "a second pass mailed again")
		f.charge(lab, ming, 1_000) // 56 %: still past 50 only
		must(t, f.pass() == 0, "no new threshold, yet mailed")
		f.mailed(b, 0, "", all...)

		f.charge(lab, ming, 9_000) // 86 %
		must(t, f.pass() == 1, "Ming past 80 %%")
		f.mailed(b, 1, "86%", owner, admin, ming)

		b = f.counts(all...)
		f.charge(lab, hua, 35_000) // Hua: 116 % at once (50, 80 and 100 recorded, 100 mailed); the lab: 61 %
		must(t, f.pass() == 2, "Hua's cap and the lab's budget")
		f.mailed(b, 2, "", owner, admin)
		f.mailed(b, 1, "116%", hua)
		f.mailed(b, 0, "", ming)
		must(t, strings.Contains(f.mails(hua.Email)[0].Body, "超过 100% 提醒线"), "Hua's mail names the highest threshold: %s", f.mails(hua.Email)[0].Body)
		subjects := f.mails(admin.Email)[0].Subject + " | " + f.mails(admin.Email)[1].Subject
		must(t, strings.Contains(subjects, "Org lab has used 61% of its monthly budget"), "the budget's mail to the admins: %s", subjects)

		b = f.counts(all...)
		must(t, f.pass() == 0, "a pass after everything was mailed mailed again")
		// A lower budget is a new limit: 61 % of ¥1,000 is 87 % of ¥700.
		f.setLimits(lab, i64(70_000), i64(30_000))
		must(t, f.pass() == 1, "the new budget's thresholds")
		f.mailed(b, 1, "87%", owner, admin)
		f.mailed(b, 0, "", ming, hua)

		// A new month: last month's spending does not count; new spending
		// crosses the thresholds again.
		f.now = time.Date(2027, 1, 4, 4, 0, 0, 0, time.UTC)
		b = f.counts(all...)
		f.charge(lab, ming, 15_000) // 50 % of the cap exactly
		must(t, f.pass() == 1, "January: Ming at 50 %% again")
		f.mailed(b, 1, "50%", owner, admin, ming)
		must(t, strings.Contains(f.mails(ming.Email)[0].Body, "in 2027-01"), "the month: %s", f.mails(ming.Email)[0].Body)
		must(t, f.pass() == 0, "January, second pass")

		// The admins turn the limits' alerts off: nothing more is mailed.
		_, err := f.svc.SetSettings(context.Background(), owner, lab.ID, spendalerts.Settings{LimitPcts: []int{}})
		must(t, err == nil, "alerts off: %v", err)
		f.charge(lab, ming, 14_000)
		must(t, f.pass() == 0, "alerts off, yet mailed")
		// The console's view: the member sees their own cap, the admin every member's.
		as, err := f.svc.Alerts(context.Background(), lab, &models.Membership{UserID: ming.ID, Role: models.RoleMember})
		must(t, err == nil && len(as) == 0, "with alerts off nothing is crossed: %+v %v", as, err)
	})
}

// What the console shows: the highest threshold crossed of each limit; a
// member sees the organisation's and their own cap, an admin every
// member's.
func TestCurrentAlertsByRole(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		owner, ming, hua := f.user("o@lab.example", locales.ZH), f.user("m@lab.example", locales.ZH), f.user("h@lab.example", locales.ZH)
		lab := f.org(models.OrgLab, i64(100_000), i64(30_000), nil, owner, models.RoleOwner, ming, models.RoleMember, hua, models.RoleMember)
		f.credit(lab, 1_000_000)
		f.charge(lab, ming, 25_000) // 83 %
		f.charge(lab, hua, 30_000)  // 100 %; the lab 55 %
		kinds := func(m *models.Membership) string {
			as, err := f.svc.Alerts(context.Background(), lab, m)
			must(t, err == nil, "alerts: %v", err)
			var out []string
			for _, a := range as {
				out = append(out, fmt.Sprintf("%s:%s:%d", a.Kind, a.UserName, a.Threshold))
			}
			return strings.Join(out, " ")
		}
		must(t, kinds(&models.Membership{UserID: owner.ID, Role: models.RoleOwner}) == "budget::50 member_cap:m:80 member_cap:h:100", "the owner: %s", kinds(&models.Membership{UserID: owner.ID, Role: models.RoleOwner}))
		must(t, kinds(&models.Membership{UserID: ming.ID, Role: models.RoleMember}) == "budget::50 member_cap:m:80", "Ming: %s", kinds(&models.Membership{UserID: ming.ID, Role: models.RoleMember}))
		must(t, kinds(nil) == kinds(&models.Membership{UserID: owner.ID, Role: models.RoleOwner}), "a platform admin looking in sees what the owner sees")
	})
}

// The cap per hour is judged on the past hour's charges (or the coming
// hour at the live rentals' rates) and mailed at most once a day.
func TestHourlyCapOncePerDay(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		owner := f.user("team@example.com", locales.EN)
		team := f.org(models.OrgTeam, nil, nil, i64(10_000), owner, models.RoleOwner)
		f.credit(team, 1_000_000)
		f.charge(team, owner, 8_500)
		must(t, f.pass() == 1, "85 %% of the cap per hour")
		ms := f.mails(owner.Email)
		must(t, len(ms) == 1 && strings.Contains(ms[0].Subject, "Org team is at 85% of its cap per hour") && strings.Contains(ms[0].Body, "at most once a day"), "the mail: %+v", ms)
		f.now = f.now.Add(2 * time.Hour) // 14:00 the same day
		f.charge(team, owner, 9_000)
		must(t, f.pass() == 0, "the same day, again")
		f.now = f.now.Add(12 * time.Hour) // 02:00 the next day in Shanghai
		f.charge(team, owner, 9_000)
		must(t, f.pass() == 1, "the next day")
	})
}

// A low-balance alert is mailed once, armed again when the balance is
// back at the threshold (a top-up), and mailed again when it falls below.
func TestLowBalanceOnceUntilTopUp(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		owner, member := f.user("wallet@example.com", locales.ZH), f.user("member@example.com", locales.ZH)
		team := f.org(models.OrgTeam, nil, nil, nil, owner, models.RoleOwner, member, models.RoleMember)
		f.credit(team, 50_000)
		_, err := f.svc.SetSettings(context.Background(), member, team.ID, spendalerts.Settings{LowBalanceFen: i64(10_000)})
		must(t, apperr.Code(err) == apperr.EFORBIDDEN, "a member set the alerts: %v", err)
		set, err := f.svc.SetSettings(context.Background(), owner, team.ID, spendalerts.Settings{LimitPcts: []int{80, 50, 80}, LowBalanceFen: i64(10_000)})
		must(t, err == nil && fmt.Sprint(set.LimitPcts) == "[50 80]", "set: %+v %v", set, err)
		got, _ := f.svc.Settings(context.Background(), team.ID)
		must(t, fmt.Sprint(got.LimitPcts) == "[50 80]" && got.LowBalanceFen != nil && *got.LowBalanceFen == 10_000 && got.RunwayHours == nil, "stored: %+v", got)

		must(t, f.pass() == 0, "¥500 is above ¥100")
		f.charge(team, owner, 45_000)
		must(t, f.pass() == 1, "¥50 is below ¥100")
		ms := f.mails(owner.Email)
		must(t, len(ms) == 1 && strings.Contains(ms[0].Subject, "余额低于 ¥100") && strings.Contains(ms[0].Body, "钱包余额为 ¥50") &&
			strings.Contains(ms[0].Body, "没有运行中的按量实例"), "the mail: %+v", ms)
		must(t, len(f.mails(member.Email)) == 0, "a plain member got the wallet's alert")
		f.charge(team, owner, 1_000)
		must(t, f.pass() == 0, "mailed again before a top-up")
		f.credit(team, 3_000) // ¥70: still below
		must(t, f.pass() == 0, "mailed again below the threshold")
		f.credit(team, 5_000) // ¥120: armed again
		res, err := f.svc.Pass(context.Background())
		must(t, err == nil && res.Mailed == 0 && res.Rearmed == 1, "the top-up arms it again: %+v %v", res, err)
		f.charge(team, owner, 3_000) // ¥90
		must(t, f.pass() == 1, "below again after the top-up")
		must(t, len(f.mails(owner.Email)) == 2, "mails: %d", len(f.mails(owner.Email)))
		// Another threshold is judged afresh; turning it off forgets it.
		_, err = f.svc.SetSettings(context.Background(), owner, team.ID, spendalerts.Settings{LowBalanceFen: i64(5_000)})
		must(t, err == nil && f.pass() == 0, "¥90 is above ¥50: %v", err)
	})
}

// The runway: the running rentals billed by the second at their prices
// and the volumes' storage; its alert is mailed once and armed again when
// a top-up makes the balance last the hours.
func TestRunway(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		if err := demo.SeedDemo(ctx, db); err != nil {
			t.Fatal(err)
		}
		offers, _, err := listing.All(ctx, db)
		must(t, err == nil && len(offers) > 0, "offers: %v", err)
		o := offers[0].Offer
		owner := f.user("runway@example.com", locales.EN)
		team := f.org(models.OrgTeam, nil, nil, nil, owner, models.RoleOwner)
		rent := func(status models.RentalStatus, term pricing.Term, free bool) {
			f.tx(func(tx *gorm.DB) error {
				return rentalstore.InsertRental(tx, &models.Rental{OrgID: team.ID, UserID: owner.ID, OfferID: o.ID, ProviderID: o.ProviderID, GPUs: 2,
					SLA: "standard", Term: term, Status: status, WorkspaceID: fmt.Sprintf("ws-runway-%d", time.Now().UnixNano()), Free: free,
					PricePerGPUHourFen: 500, SLASurchargePct: 10, CreatedAt: f.now, UpdatedAt: f.now})
			})
		}
		rw, err := f.svc.Runway(ctx, team.ID)
		must(t, err == nil && !rw.Draws() && rw.Seconds() == 0, "nothing running: %+v %v", rw, err)
		must(t, spendalerts.RunwayText(locales.ZH, rw) == "当前没有运行中的按量实例或数据盘在扣费，余额不会减少。", "%s", spendalerts.RunwayText(locales.ZH, rw))
		f.credit(team, 10_000)
		rent(models.RentalRunning, pricing.OnDemand, false) // 2 × ¥5 + 10 % SLA = ¥11 an hour
		rent(models.RentalRunning, pricing.Week, false)     // paid up front: not counted
		rent(models.RentalRunning, pricing.OnDemand, true)  // free
		rent(models.RentalStopped, pricing.OnDemand, false)
		f.tx(func(tx *gorm.DB) error {
			return rentalstore.InsertVolume(tx, &models.Volume{OrgID: team.ID, UserID: owner.ID, OfferID: o.ID, ProviderID: o.ProviderID, DatacenterID: o.DatacenterID,
				Storage: models.StorageLocal, Name: "data", WorkspaceKey: "vol-runway", SizeGB: 720, PricePerGBMonthFen: 30, Status: models.VolumeActive, CreatedAt: f.now})
		})
		rw, err = f.svc.Runway(ctx, team.ID)
		// 720 GB at ¥0.30 a month (30 days): 720 × 30 / 720 h = 30 fen an hour.
		must(t, err == nil && rw.RentalsFenPerHour == 1_100 && rw.Rentals == 1 && rw.StorageFenPerHour == 30 && rw.Volumes == 1, "the rate: %+v %v", rw, err)
		must(t, rw.Seconds() == 10_000*3600/1_130, "lasts %d s", rw.Seconds())
		must(t, spendalerts.RunwayText(locales.ZH, rw) == "按当前消费速度（每小时 ¥11.3），余额约可用 8 小时。", "zh: %s", spendalerts.RunwayText(locales.ZH, rw))
		must(t, spendalerts.RunwayText(locales.EN, rw) == "At the current rate (¥11.3 an hour) the balance lasts about 8 hours.", "en: %s", spendalerts.RunwayText(locales.EN, rw))

		_, err = f.svc.SetSettings(ctx, owner, team.ID, spendalerts.Settings{LimitPcts: []int{50}, RunwayHours: new(24)})
		must(t, err == nil, "set: %v", err)
		must(t, f.pass() == 1, "8 hours is less than 24")
		ms := f.mails(owner.Email)
		must(t, len(ms) == 1 && strings.Contains(ms[0].Subject, "lasts about 8 hours") && strings.Contains(ms[0].Body, "¥11.3 an hour") &&
			strings.Contains(ms[0].Body, "less than your alert at 24 hours"), "the mail: %+v", ms)
		must(t, f.pass() == 0, "mailed twice")
		f.credit(team, 10_000) // ¥200: 17 hours, still short
		must(t, f.pass() == 0, "still short, yet mailed")
		f.credit(team, 10_000) // ¥300: 26 hours, armed again
		res, err := f.svc.Pass(ctx)
		must(t, err == nil && res.Rearmed == 1 && res.Mailed == 0, "armed again: %+v %v", res, err)
		rent(models.RentalRunning, pricing.OnDemand, false) // twice the rate: 13 hours
		must(t, f.pass() == 1, "short again")
		must(t, len(f.mails(owner.Email)) == 2, "mails: %d", len(f.mails(owner.Email)))
	})
}

// Settings out of bounds are refused naming each field.
func TestCheckSettings(t *testing.T) {
	for name, c := range map[string]struct {
		in    spendalerts.Settings
		field string
	}{
		"0 %":                {spendalerts.Settings{LimitPcts: []int{0, 50}}, spendalerts.FieldLimitPcts},
		"101 %":              {spendalerts.Settings{LimitPcts: []int{101}}, spendalerts.FieldLimitPcts},
		"six thresholds":     {spendalerts.Settings{LimitPcts: []int{10, 20, 30, 40, 50, 60}}, spendalerts.FieldLimitPcts},
		"a low balance of 0": {spendalerts.Settings{LowBalanceFen: i64(0)}, spendalerts.FieldLowBalance},
		"a huge low balance": {spendalerts.Settings{LowBalanceFen: i64(billing.MaxTopupFen + 1)}, spendalerts.FieldLowBalance},
		"no hours":           {spendalerts.Settings{RunwayHours: new(0)}, spendalerts.FieldRunway},
		"31 days":            {spendalerts.Settings{RunwayHours: new(spendalerts.MaxRunwayHours + 1)}, spendalerts.FieldRunway},
	} {
		_, err := spendalerts.Check(c.in)
		fs, ok := err.(apperr.Fields)
		if !ok || len(fs) != 1 || fs[0].Field != c.field || fs[0].Key == "" || fs[0].Code != apperr.EINVALID {
			t.Errorf("%s: %v, want one problem naming %s", name, err, c.field)
		}
	}
	out, err := spendalerts.Check(spendalerts.Settings{LimitPcts: []int{100, 1, 50, 50}, LowBalanceFen: i64(1), RunwayHours: new(spendalerts.MaxRunwayHours)})
	must(t, err == nil && fmt.Sprint(out.LimitPcts) == "[1 50 100]", "in bounds: %+v %v", out, err)
	for in, want := range map[string]string{"50, 80, 100": "[50 80 100]", "50%，80％ 100": "[50 80 100]", "": "[]", " ": "[]"} {
		got, err := spendalerts.ParsePcts(in)
		must(t, err == nil && fmt.Sprint(got) == want, "%q: %v %v", in, got, err)
	}
	for _, in := range []string{"fifty", "50.5", "50-80"} {
		_, err := spendalerts.ParsePcts(in)
		ae, ok := apperr.As(err)
		must(t, ok && ae.Field == spendalerts.FieldLimitPcts, "%q: %v", in, err)
	}
}

func must(t *testing.T, cond bool, format string, args ...any) {
	t.Helper()
	if !cond {
		t.Fatalf(format, args...)
	}
}

// A pass reads only the organisations whose spending can have moved:
// with a limit or a wallet alert, and something running, a volume, or a
// wallet entry in the last day.
func TestPassSkipsQuietOrganisations(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		owner := f.user("quiet@example.com", locales.EN)
		lab := f.org(models.OrgLab, i64(100_000), nil, nil, owner, models.RoleOwner)
		f.org(models.OrgTeam, nil, nil, nil, owner, models.RoleOwner) // no limit, no alert: never read
		f.credit(lab, 200_000)
		f.charge(lab, owner, 60_000)
		res, err := f.svc.Pass(context.Background())
		must(t, err == nil && res.Orgs == 1 && res.Mailed == 1, "the lab, active: %+v %v", res, err)
		f.now = f.now.Add(spendalerts.ActiveWithin + time.Hour)
		res, err = f.svc.Pass(context.Background())
		must(t, err == nil && res.Orgs == 0, "a day without entries: %+v %v", res, err)
	})
}

// Passes that run at once mail each alert once.
func TestConcurrentPassesMailOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		owner := f.user("race@example.com", locales.EN)
		lab := f.org(models.OrgLab, i64(100_000), i64(50_000), nil, owner, models.RoleOwner)
		f.credit(lab, 200_000)
		f.charge(lab, owner, 60_000)
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				_, err := f.svc.Pass(context.Background())
				errs <- err
			}()
		}
		for range 4 {
			must(t, <-errs == nil, "a pass failed")
		}
		// The budget (60 %) and the owner's cap (120 %): two mails.
		must(t, len(f.mails(owner.Email)) == 2, "mails: %d", len(f.mails(owner.Email)))
	})
}

// Two partial updates at once (one sets the low balance, the other the
// runway) both count: each reads and writes in its own transaction with
// the organisation locked.
func TestPartialUpdatesAtOnceBothCount(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *models.DB) {
		f := newFixture(t, db)
		owner := f.user("both@example.com", locales.ZH)
		team := f.org(models.OrgTeam, nil, nil, nil, owner, models.RoleOwner)
		ctx := context.Background()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, change := range []func(*spendalerts.Settings) error{
			func(s *spendalerts.Settings) error { s.LowBalanceFen = i64(10_000); return nil },
			func(s *spendalerts.Settings) error { s.RunwayHours = new(24); return nil },
		} {
			wg.Go(func() { _, errs[i] = f.svc.UpdateSettings(ctx, owner, team.ID, change) })
		}
		wg.Wait()
		must(t, errs[0] == nil && errs[1] == nil, "updates: %v", errs)
		got, err := f.svc.Settings(ctx, team.ID)
		must(t, err == nil && got.LowBalanceFen != nil && *got.LowBalanceFen == 10_000 && got.RunwayHours != nil && *got.RunwayHours == 24,
			"stored after both: %+v %v", got, err)
	})
}
