// Command suanli is the whole marketplace in one binary: the web server,
// the background workers, migrations, seeding and operator commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only with --pprof-addr, on its own listener
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"suanli/accounts"
	"suanli/benchmarks"
	"suanli/billing"
	"suanli/changefeed"
	"suanli/config"
	"suanli/demo"
	"suanli/fleet"
	"suanli/handlers"
	"suanli/identity"
	"suanli/images"
	"suanli/interruptions"
	"suanli/mail"
	"suanli/metrics"
	"suanli/migrations"
	"suanli/models"
	"suanli/models/platform"
	"suanli/offers"
	"suanli/payments"
	"suanli/platformaudit"
	"suanli/providers"
	"suanli/rentals"
	"suanli/rentercli"
	"suanli/secrets"
	"suanli/standingorders"
	"suanli/views/accountpages"
	"suanli/web"
	"suanli/workers"
)

const usage = `suanli — the Suanli GPU compute marketplace

Usage:
  suanli serve   [flags]   run the web server (and, unless --workers=false, the workers)
  suanli work    [flags]   run the background workers only
  suanli agent   [flags]   run the node agent on a GPU host (--server URL --token T; --simulate dgxh100)
  suanli migrate [flags]   apply database migrations (ours and River's)
  suanli seed    [flags]   --demo: load the demo market; --scale N: add N synthetic offers
  suanli admin   CMD       operator commands: status, gpu-state, create-user, token, credit, node-token, reseal-pii, backup
  suanli login | logout | offers | types | rent | rentals | ssh | stop | start | release | logs | volumes | images | wallet | orders
                           the renter's commands, on the API (listed below by "suanli help"; docs/cli.md)

Run "suanli CMD -h" for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if rentercli.IsCommand(os.Args[1]) {
		// The renter's commands have their own exit codes (docs/cli.md).
		code := rentercli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, rentercli.EnvMap(os.Environ()))
		stop()
		os.Exit(code)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "serve":
		err = serve(ctx, args)
	case "work":
		err = work(ctx, args)
	case "agent":
		err = runAgent(ctx, args)
	case "migrate":
		err = migrate(ctx, args)
	case "seed":
		err = seed(ctx, args)
	case "admin":
		err = admin(ctx, args)
	case "-h", "--help", "help":
		fmt.Print(usage + "\n" + rentercli.Help(rentercli.HelpLang(rentercli.EnvMap(os.Environ()))))
		return
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			slog.Error(err.Error())
		}
		os.Exit(1)
	}
}

// parse parses a subcommand's flags and sets up logging.
func parse(name string, args []string, extra func(fs *flag.FlagSet)) (config.Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	get := config.Flags(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return config.Config{}, err
	}
	if fs.NArg() > 0 {
		return config.Config{}, fmt.Errorf("%s: unexpected arguments %v", name, fs.Args())
	}
	cfg, err := get()
	if err != nil {
		return cfg, fmt.Errorf("configuration:\n%w", err)
	}
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	slog.SetDefault(slog.New(slog.NewTextHandler(logOutput, &slog.HandlerOptions{Level: lvl})))
	return cfg, nil
}

// logOutput is where the commands log (and where serve --demo prints its
// logins): standard error, or a test's buffer.
var logOutput io.Writer = os.Stderr

// demoLogin is one demo account in the block serve --demo prints.
type demoLogin struct {
	role, path string
	demo.Login
}

// printDemoLogins writes the demo's accounts as a block that stands out
// from the log lines around it: where to open the demo, and each
// account's email and password (or that it was shown at the first start).
func printDemoLogins(w io.Writer, baseURL string, logins []demoLogin) {
	const rule = "================================================================"
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n  Suanli demo is ready: %s\n\n", rule, baseURL)
	for _, l := range logins {
		pw := l.Password
		if pw == "" {
			pw = "(shown at the first start; a new --data-dir makes new ones)"
		}
		fmt.Fprintf(&b, "  %-9s %-27s password %s\n  %-9s log in at %s/login, then open %s\n", l.role, l.Email, pw, "", baseURL, l.path)
	}
	fmt.Fprintf(&b, "%s\n\n", rule)
	_, _ = io.WriteString(w, b.String())
}

// open connects to the configured database and makes sure its schema is
// current: on the embedded SQLite default it migrates; on PostgreSQL it
// refuses a schema that is behind (migrations there are an explicit step).
func open(ctx context.Context, cfg config.Config) (*models.DB, error) {
	dialect, loc, err := cfg.Database()
	if err != nil {
		return nil, err
	}
	db, err := models.Open(ctx, dialect, loc)
	if err != nil {
		return nil, err
	}
	if dialect == config.SQLite {
		if n, err := migrations.Up(ctx, dialect, db.SQL); err != nil {
			db.Close()
			return nil, err
		} else if n > 0 {
			slog.Info("migrations applied", "count", n)
		}
	} else {
		st, err := migrations.Check(ctx, dialect, db.SQL)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("check schema: %w", err)
		}
		if st.Behind() {
			db.Close()
			return nil, fmt.Errorf("the database schema is behind this binary (%s): run `suanli migrate` first", st)
		}
	}
	if err := db.SyncCatalog(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sync GPU catalogue: %w", err)
	}
	return db, nil
}

func serve(ctx context.Context, args []string) error {
	cfg, err := parse("serve", args, nil)
	if err != nil {
		return err
	}
	db, err := open(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	svc := accountsService(db, cfg)
	ids, err := identityService(db, cfg)
	if err != nil {
		return err
	}
	var demoLogins []demoLogin
	if cfg.Demo {
		if err := demo.SeedDemo(ctx, db); err != nil {
			return err
		}
		admin, err := demo.SeedAdmin(ctx, svc)
		if err != nil {
			return err
		}
		provider, err := demo.SeedProvider(ctx, svc)
		if err != nil {
			return err
		}
		demoLogins = []demoLogin{{"admin", "/admin", admin}, {"provider", "/provider", provider}}
		// The demo's own accounts rent without the real-name step (the
		// operator's word, as create-user --verified-identity).
		for _, l := range demoLogins {
			if err := verifyIdentity(ctx, db, ids, l.Email); err != nil {
				return err
			}
		}
	}
	index := offers.NewIndex(db)
	index.Judge = benchmarks.JudgeOffers(db)
	if _, err := index.Refresh(ctx); err != nil {
		return err
	}
	// The first load is the process's largest burst of garbage (the rows
	// read, the sorts); hand it back to the OS now rather than keep the
	// heap it peaked at for minutes. Later changes are patched.
	debug.FreeOSMemory()
	wallet := walletService(db, cfg)
	rentals := rentalsService(db, wallet, cfg)
	if rentals.Credentials, err = registryCredentials(cfg); err != nil {
		return err
	}
	jobMetrics := workers.NewJobMetrics()
	wopts := workerOptions(cfg, cfg.Workers, rentals)
	wopts.Metrics = jobMetrics
	queue, err := workers.New(db, wopts)
	if err != nil {
		return err
	}
	rentals.Jobs = queue
	if err := queue.Start(ctx); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	bg, stopBG := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { index.Run(bg, cfg.IndexRefresh) })
	if relay := hubRelay(db, rentals); relay != nil {
		wg.Go(func() { relay.Run(bg) })
	}
	// What changed, for the pages that wait on it (the rental page's
	// event stream) instead of polling.
	changes := changefeed.New()
	wg.Go(func() { changes.Run(bg, db, changefeed.Options{}) })

	if cfg.PprofAddr != "" {
		pl, err := net.Listen("tcp", cfg.PprofAddr)
		if err != nil {
			stopBG()
			return fmt.Errorf("pprof: %w", err)
		}
		psrv := &http.Server{Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second}
		wg.Go(func() { _ = psrv.Serve(pl) })
		wg.Go(func() { <-bg.Done(); _ = psrv.Close() })
		slog.Info("profiler listening", "addr", pl.Addr().String())
	}

	if cfg.AppsDomain == "" && cfg.SecureCookies() {
		slog.Warn("renters' apps (Jupyter, declared ports) are served on the marketplace's own origin, where their scripts could act with a viewer's session: set --apps-domain (SUANLI_APPS_DOMAIN) to give each rental's apps an origin of their own")
	}
	tunnels := fleet.NewTunnels(db, cfg.Advertised())
	if err := tunnels.Forget(ctx); err != nil {
		stopBG()
		return fmt.Errorf("tunnels: %w", err)
	}
	e := web.New(&handlers.Handler{
		DB: db, Index: index, Accounts: svc, Sessions: web.NewSessions(db, cfg.SecureCookies()),
		Wallet: wallet, Rentals: rentals, StripeWebhookSecret: cfg.StripeWebhookSecret, Bank: bankDetails(cfg),
		Providers: &providers.Service{DB: db, Rentals: rentals, BaseURL: cfg.BaseURL},
		Payouts:   payoutsService(db, cfg),
		Tunnels:   tunnels, AppsDomain: cfg.AppsDomain, Changes: changes, Identity: ids,
	}, web.Options{SecureCookies: cfg.SecureCookies(), Collectors: []prometheus.Collector{metrics.New(db), jobMetrics},
		RateLimit: web.RateLimit{ReadPerSec: cfg.APIReadRate, ReadBurst: int(2 * cfg.APIReadRate), WritePerSec: cfg.APIWriteRate, WriteBurst: int(2 * cfg.APIWriteRate)}})
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		stopBG()
		return err
	}
	dialect, _, _ := cfg.Database()
	slog.Info("serving", "addr", ln.Addr().String(), "database", dialect, "workers", cfg.Workers, "demo", cfg.Demo, "offers", index.Len(), "advertise_url", tunnels.Self)
	agentsCtx, stopAgents := context.WithCancel(bg)
	defer stopAgents()
	if cfg.Demo {
		n, err := startDemoAgents(agentsCtx, &wg, db, rentals, "http://"+ln.Addr().String())
		if err != nil {
			stopBG()
			return fmt.Errorf("demo agents: %w", err)
		}
		slog.Info("simulated agents started for the demo nodes", "nodes", n)
		// The passwords were logged at seeding, and scroll away at once:
		// say them again, apart from the log, now that the server is up.
		printDemoLogins(logOutput, cfg.BaseURL, demoLogins)
	}
	// On the shutdown signal, stop the in-process demo agents and end every
	// agent's long-poll, so the HTTP server's graceful shutdown does not
	// wait for them.
	wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-bg.Done():
		}
		stopAgents()
		rentals.Hub.Close()
		changes.Close() // open event streams end
		// Agents dial again, to another replica or to this one restarted.
		tunnels.Local.Close()
	})
	httpErr := web.Serve(ctx, e, ln, cfg.ShutdownTimeout)

	// Ordered shutdown: HTTP has stopped; now the workers, then the
	// background loops, then (deferred) the database.
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := queue.Stop(sctx); err != nil {
		slog.Error("stop workers", "err", err)
	}
	stopBG()
	wg.Wait()
	slog.Info("stopped")
	return httpErr
}

func work(ctx context.Context, args []string) error {
	var metricsAddr string
	cfg, err := parse("work", args, func(fs *flag.FlagSet) {
		fs.StringVar(&metricsAddr, "metrics-addr", os.Getenv("SUANLI_METRICS_ADDR"), "serve /metrics (the jobs this process works) and /healthz on this address, e.g. :9090; off when empty (SUANLI_METRICS_ADDR)")
	})
	if err != nil {
		return err
	}
	db, err := open(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	rentals := rentalsService(db, walletService(db, cfg), cfg)
	jobMetrics := workers.NewJobMetrics()
	wopts := workerOptions(cfg, true, rentals)
	wopts.Metrics = jobMetrics
	queue, err := workers.New(db, wopts)
	if err != nil {
		return err
	}
	rentals.Jobs = queue
	if metricsAddr != "" {
		stop, err := serveWorkerMetrics(metricsAddr, jobMetrics)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := queue.Start(ctx); err != nil {
		return err
	}
	if relay := hubRelay(db, rentals); relay != nil {
		bg, stopBG := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { relay.Run(bg); close(done) }()
		defer func() { stopBG(); <-done }()
	}
	slog.Info("working")
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	return queue.Stop(sctx)
}

func migrate(ctx context.Context, args []string) error {
	var statusOnly bool
	cfg, err := parse("migrate", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&statusOnly, "status", false, "only report whether migrations are pending")
	})
	if err != nil {
		return err
	}
	dialect, loc, err := cfg.Database()
	if err != nil {
		return err
	}
	db, err := models.Open(ctx, dialect, loc)
	if err != nil {
		return err
	}
	defer db.Close()
	if !statusOnly {
		n, err := migrations.Up(ctx, dialect, db.SQL)
		if err != nil {
			return err
		}
		if err := db.SyncCatalog(ctx); err != nil {
			return err
		}
		slog.Info("migrations applied", "count", n)
	}
	st, err := migrations.Check(ctx, dialect, db.SQL)
	if err != nil {
		return err
	}
	fmt.Println(st.String())
	if st.Behind() {
		return errors.New("migrations pending")
	}
	return nil
}

func seed(ctx context.Context, args []string) error {
	var scale int
	cfg, err := parse("seed", args, func(fs *flag.FlagSet) {
		fs.IntVar(&scale, "scale", 0, "add N synthetic offers for load tests")
	})
	if err != nil {
		return err
	}
	withDemo := cfg.Demo // --demo: load the demo market (idempotent)
	if !withDemo && scale == 0 {
		return errors.New("seed: give --demo and/or --scale N")
	}
	if scale < 0 {
		return fmt.Errorf("seed: --scale must be positive, got %d", scale)
	}
	db, err := open(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	if withDemo {
		if err := demo.SeedDemo(ctx, db); err != nil {
			return err
		}
	}
	if scale > 0 {
		return demo.SeedScale(ctx, db, scale)
	}
	return nil
}

func accountsService(db *models.DB, cfg config.Config) *accounts.Service {
	return &accounts.Service{DB: db, BaseURL: cfg.BaseURL, TrialCreditFen: cfg.TrialCreditFen,
		EduSuffixes: append(slices.Clone(accounts.DefaultEduSuffixes), cfg.EduSuffixList()...)}
}

func walletService(db *models.DB, cfg config.Config) *billing.Wallet {
	w := &billing.Wallet{DB: db, BaseURL: cfg.BaseURL}
	if cfg.StripeSecretKey != "" {
		w.Gateway = payments.NewStripe(cfg.StripeSecretKey, cfg.StripeAPIBase)
	}
	return w
}

// bankDetails are the configured transfer details, or clearly marked
// example ones.
func bankDetails(cfg config.Config) accountpages.BankDetails {
	if cfg.BankAccount == "" {
		return accountpages.BankDetails{Bank: "示例银行 Example Bank", AccountName: "算力示例账户 Suanli Example Account", Account: "0000 0000 0000 0000", Demo: true}
	}
	return accountpages.BankDetails{Bank: cfg.BankName, AccountName: cfg.BankAccountName, Account: cfg.BankAccount}
}

// workerOptions configures the queue; with SMTP_URL set it delivers mail.
// rentalsService builds the rental rules; its Jobs is set once the queue exists.
func rentalsService(db *models.DB, w *billing.Wallet, cfg config.Config) *rentals.Service {
	return &rentals.Service{DB: db, Wallet: w, Hub: fleet.NewHub(), BaseURL: cfg.BaseURL, Started: time.Now(), VolumeKeepDays: cfg.VolumeKeepDays,
		// The rent gate needs no key: it reads statuses and the ledger.
		Gate: &identity.Service{DB: db, Mode: cfg.RealName}}
}

// identityService is real-name verification (--real-name, the PII key
// ring; codes go through Tencent Cloud SMS when configured, else to the
// SMS outbox). Without any key (PostgreSQL without
// SUANLI_SECRET_KEY or SUANLI_PII_KEY) nothing personal can be stored:
// starting a verification answers 503 until one is set.
func identityService(db *models.DB, cfg config.Config) (*identity.Service, error) {
	ring, err := cfg.PIIRing()
	if err != nil {
		return nil, fmt.Errorf("the PII key ring: %w", err)
	}
	if ring == nil && cfg.RealName == config.RealNameRequired {
		slog.Warn("no SUANLI_PII_KEY or SUANLI_SECRET_KEY: real-name verification cannot store ID numbers and answers 503 (set one, the same on every replica)")
	}
	ids := &identity.Service{DB: db, Ring: ring, Mode: cfg.RealName}
	if cfg.SMSTencentSecretID != "" {
		ids.SMS = identity.NewTencentSMS(identity.TencentConfig{SecretID: cfg.SMSTencentSecretID, SecretKey: cfg.SMSTencentSecretKey,
			Region: cfg.SMSTencentRegion, AppID: cfg.SMSTencentAppID, Sign: cfg.SMSTencentSign, Template: cfg.SMSTencentTemplate})
	}
	return ids, nil
}

// verifyIdentity makes the user of an email verified on the operator's
// word (no ID number stored; audited).
func verifyIdentity(ctx context.Context, db *models.DB, ids *identity.Service, email string) error {
	u, err := db.UserByEmail(ctx, email)
	if err != nil {
		return fmt.Errorf("verify the identity of %s: %w", email, err)
	}
	return ids.VerifyByOperator(ctx, u)
}

// registryCredentials is the box that seals renters' registry passwords
// and opens them for the agents' launch tasks (serve only: workers never
// touch them), from the platform key; nil where there is none.
func registryCredentials(cfg config.Config) (*secrets.Box, error) {
	key, err := cfg.PlatformKey()
	if err != nil {
		return nil, fmt.Errorf("the platform secret key: %w", err)
	}
	if key == nil {
		slog.Warn("no SUANLI_SECRET_KEY: rents with private registry credentials are refused (set it, the same on every replica)")
		return nil, nil
	}
	return key.Box(images.RegistryAuthPurpose), nil
}

func workerOptions(cfg config.Config, work bool, rentals *rentals.Service) workers.Options {
	opts := workers.Options{Work: work, Rentals: rentals, RescueAfter: cfg.JobRescueAfter, MeterEvery: cfg.MeterEvery}
	if rentals != nil {
		opts.Payouts = payoutsService(rentals.DB, cfg)
		opts.Audits, opts.AuditEvery = &platformaudit.Service{DB: rentals.DB, Rentals: rentals, Accounts: accountsService(rentals.DB, cfg)}, cfg.AuditEvery
		// Standing orders first (an on-demand order outranks every bid; an
		// order's bid that is lower than a waiting rental's is interrupted
		// by its resume), then the resumes of interrupted rentals.
		orders := &standingorders.Service{DB: rentals.DB, Rentals: rentals, Accounts: accountsService(rentals.DB, cfg)}
		opts.Market = append(opts.Market, workers.MarketPass{Name: "standing_orders", Run: orders.Pass})
		resume := &interruptions.Service{Rentals: rentals}
		opts.Market = append(opts.Market, workers.MarketPass{Name: "resume_interrupted", Run: func(ctx context.Context) error {
			_, err := resume.Pass(ctx)
			return err
		}})
	}
	if cfg.SMTPURL != "" {
		// Validated with the configuration.
		if s, err := mail.ParseURL(cfg.SMTPURL); err == nil {
			opts.Mail = s
		}
	}
	return opts
}

// payoutsService pays providers; with a Stripe key, through Connect.
func payoutsService(db *models.DB, cfg config.Config) *providers.Payouts {
	// --real-name required: unverified provider organisations wait.
	p := &providers.Payouts{DB: db, RealName: cfg.RealName}
	if cfg.StripeSecretKey != "" {
		p.Connect = payments.NewStripe(cfg.StripeSecretKey, cfg.StripeAPIBase)
	}
	return p
}

// hubRelay, on PostgreSQL, carries the rentals' hub signals between this
// process and the other web and worker replicas (nil on SQLite, where
// one process does everything); the caller runs it until shutdown.
func hubRelay(db *models.DB, rentals *rentals.Service) *fleet.HubRelay {
	if db.PGX == nil {
		return nil
	}
	return fleet.RelayOverPostgres(rentals.Hub, platform.NewNotifyRelay(db.PGX, fleet.HubChannel))
}
