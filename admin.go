package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"gorm.io/gorm"

	"suanli/accounts"
	"suanli/audit"
	"suanli/billing"
	"suanli/config"
	"suanli/fleet"
	"suanli/identity"
	"suanli/locales"
	"suanli/models"
	"suanli/models/ledger"
	"suanli/models/listing"
	"suanli/pricing"
	"suanli/providers"
)

const adminUsage = `suanli admin — operator commands (same DATABASE_URL as the server; safe while it runs)

  suanli admin status                          schema version and market counts
  suanli admin gpu-state --uuid U --state S    mark a GPU free, busy or unhealthy
  suanli admin create-user --email E --password-file F [--name N] [--admin] [--provider COMPANY [--simulated]] [--verified-identity]
                                               a user with a verified email and a personal
                                               organisation; --admin makes a platform admin;
                                               --verified-identity makes the real-name
                                               verification done on the operator's word (no
                                               ID number stored; audited: operators' and
                                               test accounts);
                                               --provider makes the user the owner of an
                                               already verified provider of that name;
                                               --simulated makes it a test provider whose
                                               nodes run simulated agents (suanli agent
                                               --simulate), labelled simulated everywhere
  suanli admin token --email E --name N        print a new API token for the user
  suanli admin credit --email E --fen N --reason R
                                               post a promotional credit to the user's
                                               personal organisation's wallet
  suanli admin orgs-per-day --email E --per-day N
                                               let the user create N organisations a day
                                               (default 5; -1 restores the default)
  suanli admin node-token --node ID            print a one-time registration token for a node's
                                               agent (suanli agent --server URL --token T)
  suanli admin clear-xids --node ID --gpu UUID --reason R
                                               after dealing with a GPU's critical XIDs (GPU
                                               reset, reboot): the node's agent forgets them
                                               and the GPU may pass its checks again; audited
  suanli admin reseal-pii                      after a new --pii-key (the old one in
                                               --pii-old-keys): seal every stored ID number
                                               and business licence again under the new key
                                               and recompute the blind indexes; prints the
                                               counts
  suanli admin backup --out F                  SQLite: a consistent copy of the live database in
                                               the new file F; PostgreSQL: runs (or prints) pg_dump
`

// adminCommand is one admin subcommand: its flags, a check of them that
// runs before the database is opened, and the work.
type adminCommand struct {
	flags func(fs *flag.FlagSet)
	check func() error
	run   func(ctx context.Context, cfg config.Config, db *models.DB) error
}

func admin(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Print(adminUsage)
		return errors.New("admin: give a command")
	}
	var (
		uuid, state, email, pwFile, name, reason string
		provider                                 string
		isAdmin, simulated, verifiedIdentity     bool
		fen                                      int64
	)
	commands := map[string]adminCommand{
		"status": {run: func(ctx context.Context, _ config.Config, db *models.DB) error {
			rows, version, err := listing.All(ctx, db)
			if err != nil {
				return err
			}
			fmt.Printf("database: %s\nlisted offers: %d\noffers version: %d\n", db.Dialect, len(rows), version)
			return nil
		}},
		"gpu-state": {
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&uuid, "uuid", "", "the GPU's UUID")
				fs.StringVar(&state, "state", "", "free, busy or unhealthy")
			},
			check: func() error { return requireFlags("gpu-state", map[string]string{"uuid": uuid, "state": state}) },
			run: func(ctx context.Context, _ config.Config, db *models.DB) error {
				if err := db.SetGPUState(ctx, uuid, models.GPUState(state)); err != nil {
					return err
				}
				fmt.Println("ok; offer availability follows within a minute (the refresh job)")
				return nil
			},
		},
		"create-user": {
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&email, "email", "", "the user's email")
				fs.StringVar(&pwFile, "password-file", "", "a file holding the password (first line); - for standard input")
				fs.StringVar(&name, "name", "", "display name (default: the email's local part)")
				fs.BoolVar(&isAdmin, "admin", false, "make the user a platform admin")
				fs.StringVar(&provider, "provider", "", "also create a verified provider organisation of this name, owned by the user")
				fs.BoolVar(&simulated, "simulated", false, "with --provider: a test provider whose nodes run simulated agents (--simulate)")
				fs.BoolVar(&verifiedIdentity, "verified-identity", false, "make the user's real-name verification done on the operator's word (no ID number stored; audited)")
			},
			check: func() error {
				if simulated && provider == "" {
					return errors.New("admin create-user: --simulated needs --provider")
				}
				return requireFlags("create-user", map[string]string{"email": email, "password-file": pwFile})
			},
			run: func(ctx context.Context, cfg config.Config, db *models.DB) error {
				password, err := readPassword(pwFile)
				if err != nil {
					return err
				}
				u, err := accountsService(db, cfg).CreateUser(ctx, email, password, name, isAdmin)
				if err != nil {
					return err
				}
				role := ""
				if isAdmin {
					role = " (platform admin)"
				}
				fmt.Printf("created user %d <%s>%s\n", u.ID, u.Email, role)
				if verifiedIdentity {
					if err := (&identity.Service{DB: db, Mode: cfg.RealName}).VerifyByOperator(ctx, u); err != nil {
						return fmt.Errorf("admin create-user: the real-name verification: %w", err)
					}
					fmt.Printf("real-name verification of %s done by the operator (no ID number stored)\n", u.Email)
				}
				if provider == "" {
					return nil
				}
				// Operators onboarding a trusted provider skip the review.
				svc := &providers.Service{DB: db, BaseURL: cfg.BaseURL}
				create, kind := svc.CreateVerified, "verified"
				if simulated {
					// Simulation is the platform's decision: only here (and in
					// the demo) is a provider made whose nodes run simulated.
					create, kind = svc.CreateSimulated, "simulated (test) verified"
				}
				acc, err := create(ctx, u, provider)
				if err != nil {
					return fmt.Errorf("admin create-user: the provider: %w", err)
				}
				fmt.Printf("created %s provider %d %q (organisation %d), owned by %s\n", kind, acc.Provider.ID, acc.Provider.NameZH, acc.Org.ID, u.Email)
				return nil
			},
		},
		"token": {
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&email, "email", "", "the user's email")
				fs.StringVar(&name, "name", "", "a name for the token")
			},
			check: func() error { return requireFlags("token", map[string]string{"email": email, "name": name}) },
			run: func(ctx context.Context, cfg config.Config, db *models.DB) error {
				u, err := db.UserByEmail(ctx, email)
				if err != nil {
					return fmt.Errorf("admin token: %w", err)
				}
				plain, _, err := accountsService(db, cfg).CreateAPIToken(ctx, u, name)
				if err != nil {
					return err
				}
				fmt.Println(plain)
				return nil
			},
		},
	}
	commands["credit"] = adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&email, "email", "", "the user whose personal organisation is credited")
			fs.Int64Var(&fen, "fen", 0, "the amount in fen (¥1 = 100)")
			fs.StringVar(&reason, "reason", "", "why, shown in the ledger")
		},
		check: func() error {
			if fen <= 0 || fen > billing.MaxTopupFen {
				return fmt.Errorf("admin credit: --fen must be 1 to %d", billing.MaxTopupFen)
			}
			return requireFlags("credit", map[string]string{"email": email, "reason": reason})
		},
		run: func(ctx context.Context, _ config.Config, db *models.DB) error {
			u, err := db.UserByEmail(ctx, email)
			if err != nil {
				return fmt.Errorf("admin credit: %w", err)
			}
			orgs, err := db.OrgsOfUser(ctx, u.ID)
			if err != nil || len(orgs) == 0 || !orgs[0].Org.Personal {
				return fmt.Errorf("admin credit: %s has no personal organisation", email)
			}
			org := orgs[0].Org.ID
			if err := db.Tx(ctx, func(tx *gorm.DB) error {
				if err := billing.CreditPromo(tx, org, fen, "promo_credit", reason, nil, nil, db.Now().UTC()); err != nil {
					return err
				}
				// The operator at the console is the system: no user is signed in.
				return audit.Record(ctx, tx, audit.WalletCredit, fmt.Sprintf("org:%d", org), audit.Fen(fen), email+": "+reason,
					locales.M("audit.credit", email, reason))
			}); err != nil {
				return err
			}
			bal, err := ledger.WalletBalance(ctx, db, org)
			if err != nil {
				return err
			}
			fmt.Printf("credited ¥%s to organisation %d; balance ¥%s\n", pricing.FenToYuanString(fen), org, pricing.FenToYuanString(bal))
			return nil
		},
	}
	var perDay int
	commands["orgs-per-day"] = adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&email, "email", "", "the user")
			fs.IntVar(&perDay, "per-day", -1, "organisations the user may create per day; -1: the default")
		},
		check: func() error {
			if perDay < -1 || perDay > accounts.MaxOrgsPerDay {
				return fmt.Errorf("admin orgs-per-day: --per-day must be -1 to %d", accounts.MaxOrgsPerDay)
			}
			return requireFlags("orgs-per-day", map[string]string{"email": email})
		},
		run: func(ctx context.Context, cfg config.Config, db *models.DB) error {
			u, err := db.UserByEmail(ctx, email)
			if err != nil {
				return fmt.Errorf("admin orgs-per-day: %w", err)
			}
			var n *int
			if perDay >= 0 {
				n = &perDay
			}
			if err := accountsService(db, cfg).SetOrgsPerDay(ctx, nil, u.ID, n); err != nil {
				return err
			}
			if n == nil {
				fmt.Printf("%s may create %d organisations a day (the default)\n", email, accounts.DefaultOrgsPerDay)
			} else {
				fmt.Printf("%s may create %d organisations a day\n", email, *n)
			}
			return nil
		},
	}
	var nodeID int64
	commands["node-token"] = adminCommand{
		flags: func(fs *flag.FlagSet) { fs.Int64Var(&nodeID, "node", 0, "the node's id") },
		check: func() error {
			if nodeID <= 0 {
				return errors.New("admin node-token: give --node ID")
			}
			return nil
		},
		run: func(ctx context.Context, _ config.Config, db *models.DB) error {
			tok, err := (&fleet.Fleet{DB: db}).IssueRegistrationToken(ctx, nodeID)
			if err != nil {
				return fmt.Errorf("admin node-token: %w", err)
			}
			fmt.Println(tok)
			return nil
		},
	}
	var xidGPU string
	commands["clear-xids"] = adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.Int64Var(&nodeID, "node", 0, "the node's id")
			fs.StringVar(&xidGPU, "gpu", "", "the GPU's UUID")
			fs.StringVar(&reason, "reason", "", "what was done about the XIDs, for the audit log")
		},
		check: func() error {
			if nodeID <= 0 {
				return errors.New("admin clear-xids: give --node ID")
			}
			return requireFlags("clear-xids", map[string]string{"gpu": xidGPU, "reason": reason})
		},
		run: func(ctx context.Context, _ config.Config, db *models.DB) error {
			// The operator at the console is the system: no user is signed in.
			id, err := (&fleet.Fleet{DB: db}).ClearXIDs(ctx, nodeID, xidGPU, reason)
			if err != nil {
				return fmt.Errorf("admin clear-xids: %w", err)
			}
			fmt.Printf("queued task %d: node %d's agent forgets the critical XIDs of %s when it next polls\n", id, nodeID, xidGPU)
			return nil
		},
	}
	commands["reseal-pii"] = adminCommand{run: func(ctx context.Context, cfg config.Config, db *models.DB) error {
		ids, err := identityService(db, cfg)
		if err != nil {
			return err
		}
		counts, err := ids.Reseal(ctx)
		for _, c := range counts {
			fmt.Printf("%s: %d sealed values, %d sealed again under the current key\n", c.Kind, c.Seen, c.Resealed)
			if len(c.Duplicates) > 0 {
				fmt.Printf("%s: %d ID numbers verified on more than one account (their digest left as it was; review them on /admin/users/{id}/real-name):\n", c.Kind, len(c.Duplicates))
				for _, d := range c.Duplicates {
					fmt.Printf("  user %d, also verified on users %v\n", d.UserID, d.Others)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("admin reseal-pii: %w", err)
		}
		fmt.Println("done: the old keys in --pii-old-keys may be removed")
		return nil
	}}
	var backupOut string
	commands["backup"] = adminCommand{
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&backupOut, "out", "", "the backup file to create; it must not exist")
		},
		check: func() error { return requireFlags("backup", map[string]string{"out": backupOut}) },
		run: func(ctx context.Context, cfg config.Config, db *models.DB) error {
			if db.Dialect == config.Postgres {
				return backupPostgres(ctx, cfg.DatabaseURL, backupOut)
			}
			if err := backupSQLite(ctx, db, backupOut); err != nil {
				return err
			}
			fmt.Printf("backed up to %s\n", backupOut)
			return nil
		},
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Print(adminUsage)
		return fmt.Errorf("admin: unknown command %q", args[0])
	}
	cfg, err := parse("admin "+args[0], args[1:], cmd.flags)
	if err != nil {
		return err
	}
	if cmd.check != nil {
		if err := cmd.check(); err != nil {
			return err
		}
	}
	db, err := open(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	return cmd.run(ctx, cfg, db)
}

// requireFlags names the first empty flag of a command.
func requireFlags(cmd string, flags map[string]string) error {
	for _, f := range slices.Sorted(maps.Keys(flags)) {
		if flags[f] == "" {
			return fmt.Errorf("admin %s: --%s is required", cmd, f)
		}
	}
	return nil
}

// readPassword reads the first line of a file (or standard input for "-"),
// so passwords never appear in the process list or shell history.
func readPassword(path string) (string, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("password file: %w", err)
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
