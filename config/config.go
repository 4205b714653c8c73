// Package config reads and validates the process configuration from flags
// and environment variables. Flags win over the environment.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"suanli/mail"
	"suanli/secrets"
)

// Config is the validated configuration shared by every subcommand.
type Config struct {
	// Addr is the HTTP listen address (SUANLI_ADDR, --addr).
	Addr string
	// DatabaseURL selects the database: empty for the embedded SQLite file
	// under DataDir, a postgres:// URL for PostgreSQL, or sqlite:PATH.
	DatabaseURL string
	// DataDir holds the embedded SQLite database (SUANLI_DATA_DIR, --data-dir).
	DataDir string
	// Workers runs the River workers inside serve (--workers).
	Workers bool
	// Demo seeds demo data at start (--demo).
	Demo bool
	// LogLevel is debug, info, warn or error (SUANLI_LOG_LEVEL, --log-level).
	LogLevel string
	// ShutdownTimeout bounds each shutdown stage (SUANLI_SHUTDOWN_TIMEOUT).
	ShutdownTimeout time.Duration
	// BaseURL is the public address, used in mailed links; an https URL
	// also makes the session and CSRF cookies Secure (SUANLI_BASE_URL).
	BaseURL string
	// EduSuffixes adds institutional email suffixes to the built-in list,
	// comma-separated (SUANLI_EDU_SUFFIXES).
	EduSuffixes string
	// SMTPURL, when set, delivers mail: smtp://[user:pass@]host:port?from=addr
	// (SMTP_URL). Without it mail waits in the outbox.
	SMTPURL string
	// Stripe: the secret key (STRIPE_SECRET_KEY; empty: card payments are
	// not configured), the API base (STRIPE_API_BASE; stripe-mock locally)
	// and the webhook signing secret (STRIPE_WEBHOOK_SECRET).
	StripeSecretKey, StripeAPIBase, StripeWebhookSecret string
	// TrialCreditFen is granted once per organisation when its owner's
	// email is verified (SUANLI_TRIAL_CREDIT_FEN).
	TrialCreditFen int64
	// Bank details for transfers (SUANLI_BANK_NAME, SUANLI_BANK_ACCOUNT_NAME,
	// SUANLI_BANK_ACCOUNT); empty: example details shown as such.
	BankName, BankAccountName, BankAccount string
	// PprofAddr, when set, serves Go's profiler there (keep it on loopback).
	PprofAddr string
	// JobRescueAfter is when a job left running by a crashed process is
	// run again (SUANLI_JOB_RESCUE_AFTER).
	JobRescueAfter time.Duration
	// IndexRefresh is how often serve checks the database for offer changes
	// made by other processes (SUANLI_INDEX_REFRESH).
	IndexRefresh time.Duration
	// APIReadRate and APIWriteRate limit API requests made with a token, per
	// token and per replica, in requests per second with bursts of twice as
	// many; 0 turns a limit off (SUANLI_API_READ_RATE, SUANLI_API_WRITE_RATE).
	APIReadRate, APIWriteRate float64
	// MeterEvery is how often the workers bill running rentals
	// (SUANLI_METER_EVERY).
	MeterEvery time.Duration
	// AuditEvery is how often the workers run a pass of the platform's
	// audits (each offer is audited about daily); 0 turns them off
	// (SUANLI_AUDIT_EVERY).
	AuditEvery time.Duration
	// VolumeKeepDays is how long a stopped rental's volume is kept without
	// a start before it is deleted, files and all (SUANLI_VOLUME_KEEP_DAYS).
	VolumeKeepDays int
	// SecretKey is the platform's secret key (SUANLI_SECRET_KEY): what
	// must be kept but never shown again (renters' registry passwords) is
	// sealed under keys derived from it. Empty: see PlatformKey.
	SecretKey string
	// RealName is whether renting and payouts need real-name
	// verification (SUANLI_REAL_NAME): RealNameRequired (mainland China's
	// rule, the default) or RealNameOff (deployments outside it).
	RealName string
	// PIIKey seals personal information (ID numbers, licence images)
	// when set (SUANLI_PII_KEY); empty: a key derived from the platform
	// key. PIIOldKeys (SUANLI_PII_OLD_KEYS, comma-separated) still open
	// what older keys sealed, until `suanli admin reseal-pii` has run.
	PIIKey, PIIOldKeys string
	// SMSTencent* send real-name verification codes through Tencent Cloud
	// SMS when SMSTencentSecretID is set (SUANLI_SMS_TENCENT_*: the API
	// key pair, the SMS application's SdkAppId, the approved signature and
	// template, the region); otherwise codes wait in the SMS outbox.
	SMSTencentSecretID, SMSTencentSecretKey, SMSTencentAppID, SMSTencentSign, SMSTencentTemplate, SMSTencentRegion string
	// AdvertiseURL is this web replica's URL as the other replicas reach
	// it (SUANLI_ADVERTISE_URL): a renter's request for a node whose
	// agent's tunnel another replica holds is passed on there. Empty: see
	// Advertised.
	AdvertiseURL string
	// AppsDomain, when set, is where renters' apps (Jupyter, declared
	// ports) are served, each rental on an origin of its own,
	// r{id}.AppsDomain (SUANLI_APPS_DOMAIN): a wildcard DNS name (and
	// certificate) pointing at the web replicas.
	AppsDomain string
}

// Flags registers the shared flags on fs, with defaults from the environment,
// and returns a function that validates and returns the Config after parsing.
func Flags(fs *flag.FlagSet) func() (Config, error) {
	var c Config
	fs.StringVar(&c.Addr, "addr", env("SUANLI_ADDR", ":8080"), "HTTP listen address (SUANLI_ADDR)")
	fs.StringVar(&c.DatabaseURL, "database-url", env("DATABASE_URL", ""), "database URL: empty for embedded SQLite, postgres://… for PostgreSQL (DATABASE_URL)")
	fs.StringVar(&c.DataDir, "data-dir", env("SUANLI_DATA_DIR", "./data"), "directory of the embedded SQLite database (SUANLI_DATA_DIR)")
	fs.BoolVar(&c.Workers, "workers", envBool("SUANLI_WORKERS", true), "run background workers in this process (SUANLI_WORKERS)")
	fs.BoolVar(&c.Demo, "demo", envBool("SUANLI_DEMO", false), "seed demo data at start, idempotently (SUANLI_DEMO)")
	fs.StringVar(&c.LogLevel, "log-level", env("SUANLI_LOG_LEVEL", "info"), "log level: debug, info, warn, error (SUANLI_LOG_LEVEL)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", envDuration("SUANLI_SHUTDOWN_TIMEOUT", 15*time.Second), "time allowed for each shutdown stage (SUANLI_SHUTDOWN_TIMEOUT)")
	fs.StringVar(&c.BaseURL, "base-url", env("SUANLI_BASE_URL", ""), "public URL for links in mail; https makes cookies Secure (SUANLI_BASE_URL; default http://localhost:PORT)")
	fs.StringVar(&c.EduSuffixes, "edu-suffixes", env("SUANLI_EDU_SUFFIXES", ""), "extra institutional email suffixes for labs, comma-separated, e.g. .edu.hk,.ac.jp (SUANLI_EDU_SUFFIXES)")
	fs.StringVar(&c.SMTPURL, "smtp-url", env("SMTP_URL", ""), "deliver mail through smtp://[user:pass@]host:port?from=addr; empty keeps it in the outbox (SMTP_URL)")
	fs.StringVar(&c.StripeSecretKey, "stripe-secret-key", env("STRIPE_SECRET_KEY", ""), "Stripe secret key; empty: card payments not configured (STRIPE_SECRET_KEY)")
	fs.StringVar(&c.StripeAPIBase, "stripe-api-base", env("STRIPE_API_BASE", ""), "Stripe API URL, e.g. stripe-mock's http://127.0.0.1:12111 (STRIPE_API_BASE)")
	fs.StringVar(&c.StripeWebhookSecret, "stripe-webhook-secret", env("STRIPE_WEBHOOK_SECRET", ""), "signing secret of the Stripe webhook endpoint (STRIPE_WEBHOOK_SECRET)")
	fs.Int64Var(&c.TrialCreditFen, "trial-credit-fen", envInt64("SUANLI_TRIAL_CREDIT_FEN", 2000), "trial credit in fen granted once per organisation on email verification; 0: none (SUANLI_TRIAL_CREDIT_FEN)")
	fs.StringVar(&c.BankName, "bank-name", env("SUANLI_BANK_NAME", ""), "bank of the account transfers go to (SUANLI_BANK_NAME)")
	fs.StringVar(&c.BankAccountName, "bank-account-name", env("SUANLI_BANK_ACCOUNT_NAME", ""), "name on that account (SUANLI_BANK_ACCOUNT_NAME)")
	fs.StringVar(&c.BankAccount, "bank-account", env("SUANLI_BANK_ACCOUNT", ""), "account number (SUANLI_BANK_ACCOUNT)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", env("SUANLI_PPROF_ADDR", ""), "serve Go's profiler on this address, e.g. 127.0.0.1:6060; off when empty (SUANLI_PPROF_ADDR)")
	fs.DurationVar(&c.JobRescueAfter, "job-rescue-after", envDuration("SUANLI_JOB_RESCUE_AFTER", time.Minute), "when a job left running by a crashed process is run again; longer than any job's timeout (SUANLI_JOB_RESCUE_AFTER)")
	fs.Float64Var(&c.APIReadRate, "api-read-rate", envFloat("SUANLI_API_READ_RATE", 20), "API GET requests per second per token on each replica, bursts of twice as many; 0: unlimited (SUANLI_API_READ_RATE)")
	fs.Float64Var(&c.APIWriteRate, "api-write-rate", envFloat("SUANLI_API_WRITE_RATE", 5), "API POST/PATCH requests per second per token on each replica, bursts of twice as many; 0: unlimited (SUANLI_API_WRITE_RATE)")
	fs.DurationVar(&c.IndexRefresh, "index-refresh", envDuration("SUANLI_INDEX_REFRESH", 500*time.Millisecond), "how often to check for offer changes made by other processes, patched in from the change log (SUANLI_INDEX_REFRESH)")
	fs.DurationVar(&c.AuditEvery, "audit-every", envDuration("SUANLI_AUDIT_EVERY", 10*time.Minute), "how often the workers run a pass of the platform's audit rentals (each offer about daily); 0 turns them off (SUANLI_AUDIT_EVERY)")
	fs.DurationVar(&c.MeterEvery, "meter-every", envDuration("SUANLI_METER_EVERY", time.Minute), "how often the workers bill running rentals; each pass bills up to the current second (SUANLI_METER_EVERY)")
	fs.IntVar(&c.VolumeKeepDays, "volume-keep-days", int(envInt64("SUANLI_VOLUME_KEEP_DAYS", 7)), "days a stopped rental's volume is kept (and billed as storage) without a start before it is deleted, with mails 3 days and 1 day before (SUANLI_VOLUME_KEEP_DAYS)")
	fs.StringVar(&c.RealName, "real-name", env("SUANLI_REAL_NAME", RealNameRequired), "real-name verification (实名认证) before renting and payouts: required (mainland China) or off (SUANLI_REAL_NAME)")
	fs.StringVar(&c.PIIKey, "pii-key", env("SUANLI_PII_KEY", ""), "key sealing ID numbers and licence images: 64 hex digits or base64 of 32+ bytes; empty: derived from the platform secret key; prefer the environment (SUANLI_PII_KEY)")
	fs.StringVar(&c.PIIOldKeys, "pii-old-keys", env("SUANLI_PII_OLD_KEYS", ""), "earlier PII keys, comma-separated, kept to open what they sealed until `admin reseal-pii` ran (SUANLI_PII_OLD_KEYS)")
	fs.StringVar(&c.SMSTencentSecretID, "sms-tencent-secret-id", env("SUANLI_SMS_TENCENT_SECRET_ID", ""), "Tencent Cloud API SecretId sending SMS codes; empty: codes wait in the SMS outbox (/admin/sms) (SUANLI_SMS_TENCENT_SECRET_ID)")
	fs.StringVar(&c.SMSTencentSecretKey, "sms-tencent-secret-key", env("SUANLI_SMS_TENCENT_SECRET_KEY", ""), "its SecretKey; prefer the environment (SUANLI_SMS_TENCENT_SECRET_KEY)")
	fs.StringVar(&c.SMSTencentAppID, "sms-tencent-app-id", env("SUANLI_SMS_TENCENT_APP_ID", ""), "the SMS application's SdkAppId (SUANLI_SMS_TENCENT_APP_ID)")
	fs.StringVar(&c.SMSTencentSign, "sms-tencent-sign", env("SUANLI_SMS_TENCENT_SIGN", ""), "the approved SMS signature, e.g. 算力 (SUANLI_SMS_TENCENT_SIGN)")
	fs.StringVar(&c.SMSTencentTemplate, "sms-tencent-template", env("SUANLI_SMS_TENCENT_TEMPLATE", ""), "the approved template's id; {1} is the code, {2} its minutes (SUANLI_SMS_TENCENT_TEMPLATE)")
	fs.StringVar(&c.SMSTencentRegion, "sms-tencent-region", env("SUANLI_SMS_TENCENT_REGION", "ap-guangzhou"), "the SMS API's region (SUANLI_SMS_TENCENT_REGION)")
	fs.StringVar(&c.SecretKey, "secret-key", env("SUANLI_SECRET_KEY", ""), "platform secret key sealing renters' registry credentials: 64 hex digits or base64 of 32+ random bytes; prefer the environment; empty: DATA_DIR/secret.key with the embedded database, none with PostgreSQL (SUANLI_SECRET_KEY)")
	fs.StringVar(&c.AppsDomain, "apps-domain", env("SUANLI_APPS_DOMAIN", ""), "serve renters' apps (Jupyter, declared ports) on an origin of their own per rental, r{id}.DOMAIN (wildcard DNS and certificate to the web replicas), so that their scripts never share the marketplace's origin; empty: on the marketplace's origin (SUANLI_APPS_DOMAIN)")
	fs.StringVar(&c.AdvertiseURL, "advertise-url", env("SUANLI_ADVERTISE_URL", ""), "this web replica's URL as the other replicas reach it, for browser access through a node's tunnel held by another replica (serve on PostgreSQL); empty: http://FIRST-NON-LOOPBACK-IP:PORT (SUANLI_ADVERTISE_URL)")
	return func() (Config, error) {
		if c.BaseURL == "" {
			port := "8080"
			if _, p, err := net.SplitHostPort(c.Addr); err == nil && p != "" {
				port = p
			}
			c.BaseURL = "http://localhost:" + port
		}
		return c, c.Validate()
	}
}

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("--addr/SUANLI_ADDR %q: want host:port, e.g. :8080", c.Addr))
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		errs = append(errs, fmt.Errorf("--addr/SUANLI_ADDR %q: port must be 0-65535", c.Addr))
	}
	if _, _, err := c.Database(); err != nil {
		errs = append(errs, err)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("--log-level/SUANLI_LOG_LEVEL %q: want debug, info, warn or error", c.LogLevel))
	}
	if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--base-url/SUANLI_BASE_URL %q: want http(s)://host[:port]", c.BaseURL))
	}
	for _, sfx := range c.EduSuffixList() {
		if !strings.HasPrefix(sfx, ".") || strings.ContainsAny(sfx, " @/") {
			errs = append(errs, fmt.Errorf("--edu-suffixes/SUANLI_EDU_SUFFIXES: %q must look like .edu.hk", sfx))
		}
	}
	if c.SMTPURL != "" {
		if _, err := mail.ParseURL(c.SMTPURL); err != nil {
			errs = append(errs, err)
		}
	}
	if c.TrialCreditFen < 0 || c.TrialCreditFen > 100_000 {
		errs = append(errs, errors.New("--trial-credit-fen/SUANLI_TRIAL_CREDIT_FEN must be 0 to 100000 (¥1,000)"))
	}
	if c.StripeAPIBase != "" {
		if u, err := url.Parse(c.StripeAPIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			errs = append(errs, fmt.Errorf("STRIPE_API_BASE %q: want an http(s) URL", c.StripeAPIBase))
		}
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("--shutdown-timeout must be positive"))
	}
	if c.JobRescueAfter < 40*time.Second {
		errs = append(errs, errors.New("--job-rescue-after must be at least 40s (longer than any job's 30 s timeout)"))
	}
	if !(c.APIReadRate >= 0) || !(c.APIWriteRate >= 0) {
		errs = append(errs, errors.New("--api-read-rate/--api-write-rate: want requests per second, 0 for no limit"))
	}
	if c.IndexRefresh <= 0 {
		errs = append(errs, errors.New("--index-refresh must be positive"))
	}
	if c.VolumeKeepDays < 1 || c.VolumeKeepDays > 365 {
		errs = append(errs, errors.New("--volume-keep-days must be from 1 to 365"))
	}
	if c.MeterEvery < time.Second {
		errs = append(errs, errors.New("--meter-every must be at least 1s"))
	}
	if c.AuditEvery < 0 {
		errs = append(errs, errors.New("--audit-every must be 0 (off) or more"))
	}
	if c.AppsDomain != "" && !appsDomain.MatchString(c.AppsDomain) {
		errs = append(errs, fmt.Errorf("--apps-domain/SUANLI_APPS_DOMAIN %q: want a DNS name, e.g. apps.suanli.example.cn", c.AppsDomain))
	}
	if c.AdvertiseURL != "" {
		if u, err := url.Parse(c.AdvertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, fmt.Errorf("--advertise-url/SUANLI_ADVERTISE_URL %q: want http(s)://host:port", c.AdvertiseURL))
		}
	}
	if c.RealName != RealNameRequired && c.RealName != RealNameOff {
		errs = append(errs, fmt.Errorf("--real-name/SUANLI_REAL_NAME %q: want required or off", c.RealName))
	}
	for i, k := range append([]string{c.PIIKey}, splitList(c.PIIOldKeys)...) {
		if k == "" && i == 0 {
			continue
		}
		if _, err := secrets.ParseKey(k); err != nil {
			errs = append(errs, fmt.Errorf("--pii-key/--pii-old-keys: %w", err))
		}
	}
	if tc := []string{c.SMSTencentSecretKey, c.SMSTencentAppID, c.SMSTencentSign, c.SMSTencentTemplate}; c.SMSTencentSecretID != "" || slices.ContainsFunc(tc, func(v string) bool { return v != "" }) {
		if c.SMSTencentSecretID == "" || slices.Contains(tc, "") || c.SMSTencentRegion == "" {
			errs = append(errs, errors.New("--sms-tencent-*/SUANLI_SMS_TENCENT_*: set all of the secret id and key, app id, sign, template and region, or none"))
		}
	}
	if c.SecretKey != "" {
		if _, err := secrets.ParseKey(c.SecretKey); err != nil {
			// The key itself is never repeated in a message.
			errs = append(errs, fmt.Errorf("--secret-key/SUANLI_SECRET_KEY: %w", err))
		}
	}
	return errors.Join(errs...)
}

// appsDomain is a DNS name of two labels or more (letters, digits,
// hyphens), without a scheme or port.
var appsDomain = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$`)

// Advertised is the URL other web replicas reach this one at, for
// browser access through node tunnels: --advertise-url when set; on the
// embedded database (one process) none; else http:// with this host's
// first non-loopback IP address (a container's or a pod's own) and the
// --addr port.
func (c Config) Advertised() string {
	if c.AdvertiseURL != "" {
		return strings.TrimRight(c.AdvertiseURL, "/")
	}
	if dialect, _, err := c.Database(); err != nil || dialect == SQLite {
		return ""
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = ""
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				host = n.IP.String()
				break
			}
		}
		if host == "" {
			host = "127.0.0.1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// SecretKeyFile is the key file of an installation on the embedded
// database that configured no SUANLI_SECRET_KEY, in its data directory.
const SecretKeyFile = "secret.key"

// PlatformKey returns the platform's secret key: SUANLI_SECRET_KEY when
// set; else, on SQLite (one host), the key in SecretKeyFile beside the
// database file, made on first use; else (PostgreSQL, where replicas
// must share one key) nil: the platform then keeps no secrets, and
// refuses what would need one.
func (c Config) PlatformKey() (*secrets.Key, error) {
	if c.SecretKey != "" {
		return secrets.ParseKey(c.SecretKey)
	}
	dialect, loc, err := c.Database()
	if err != nil || dialect != SQLite {
		return nil, err
	}
	return secrets.LoadOrCreate(filepath.Join(filepath.Dir(loc), SecretKeyFile))
}

// Real-name modes (--real-name).
const (
	RealNameRequired = "required"
	RealNameOff      = "off"
)

// PIIPurpose is what personal information is sealed for: a ring's keys
// derive from it, so PII never opens under another purpose's key.
const PIIPurpose = "pii"

// PIIRing returns the keys sealing personal information: --pii-key (or,
// when empty, the platform key) current, --pii-old-keys to open older
// values. It is nil when there is no key at all (PostgreSQL without
// SUANLI_SECRET_KEY or SUANLI_PII_KEY): nothing personal can be stored.
func (c Config) PIIRing() (*secrets.Ring, error) {
	var cur *secrets.Key
	var err error
	if c.PIIKey != "" {
		cur, err = secrets.ParseKey(c.PIIKey)
	} else {
		cur, err = c.PlatformKey()
	}
	if err != nil || cur == nil {
		return nil, err
	}
	var old []*secrets.Key
	for _, s := range splitList(c.PIIOldKeys) {
		k, err := secrets.ParseKey(s)
		if err != nil {
			return nil, fmt.Errorf("--pii-old-keys: %w", err)
		}
		old = append(old, k)
	}
	return secrets.NewRing(PIIPurpose, cur, old...), nil
}

// splitList is a comma-separated list's non-empty items, trimmed.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Dialects.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Database returns the dialect and the driver-level location: a file path
// for SQLite, the URL itself for PostgreSQL.
func (c Config) Database() (dialect, location string, err error) {
	u := c.DatabaseURL
	switch {
	case u == "":
		if c.DataDir == "" {
			return "", "", errors.New("--data-dir/SUANLI_DATA_DIR must not be empty with the embedded database")
		}
		return SQLite, filepath.Join(c.DataDir, "suanli.db"), nil
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		if _, err := url.Parse(u); err != nil {
			return "", "", fmt.Errorf("DATABASE_URL: %v", err)
		}
		return Postgres, u, nil
	case strings.HasPrefix(u, "sqlite:"), strings.HasPrefix(u, "file:"):
		p := strings.TrimPrefix(strings.TrimPrefix(u, "sqlite:"), "file:")
		p = strings.TrimPrefix(p, "//")
		if i := strings.IndexByte(p, '?'); i >= 0 {
			p = p[:i]
		}
		if p == "" {
			return "", "", fmt.Errorf("DATABASE_URL %q: no file path", u)
		}
		return SQLite, p, nil
	}
	return "", "", fmt.Errorf("DATABASE_URL %q: want postgres://…, sqlite:PATH, or empty for the embedded default", redact(u))
}

func redact(u string) string {
	if p, err := url.Parse(u); err == nil && p.User != nil {
		p.User = url.User(p.User.Username())
		return p.String()
	}
	return u
}

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

func envBool(key string, def bool) bool {
	if v, ok := os.LookupEnv(key); ok {
		b, err := strconv.ParseBool(v)
		if err == nil {
			return b
		}
	}
	return def
}

func envInt64(key string, def int64) int64 {
	if v, ok := os.LookupEnv(key); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return def
}

func envFloat(key string, def float64) float64 {
	if v, ok := os.LookupEnv(key); ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(key); ok {
		d, err := time.ParseDuration(v)
		if err == nil {
			return d
		}
	}
	return def
}

// EduSuffixList returns the extra institutional suffixes.
func (c Config) EduSuffixList() []string {
	var out []string
	for _, s := range strings.Split(c.EduSuffixes, ",") {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// SecureCookies reports whether cookies must be Secure: the site is
// served over HTTPS.
func (c Config) SecureCookies() bool { return strings.HasPrefix(c.BaseURL, "https://") }
