package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

const adminUsage = `suanli admin — operator commands (same DATABASE_URL as the server; safe while it runs)

  suanli admin status                          schema version and market counts
  suanli admin gpu-state --uuid U --state S    mark a GPU free, busy or unhealthy
  suanli admin create-user --email E --password-file F [--name N] [--admin]
                                               a user with a verified email and a personal
                                               organisation; --admin makes a platform admin
  suanli admin token --email E --name N        print a new API token for the user
`

func admin(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Print(adminUsage)
		return errors.New("admin: give a command")
	}
	switch args[0] {
	case "status":
		cfg, err := parse("admin status", args[1:], nil)
		if err != nil {
			return err
		}
		db, err := open(ctx, cfg)
		if err != nil {
			return err
		}
		defer db.Close()
		rows, version, err := db.ListedOffers(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("database: %s\nlisted offers: %d\noffers version: %d\n", db.Dialect, len(rows), version)
		return nil
	case "gpu-state":
		var uuid, state string
		cfg, err := parse("admin gpu-state", args[1:], func(fs *flag.FlagSet) {
			fs.StringVar(&uuid, "uuid", "", "the GPU's UUID")
			fs.StringVar(&state, "state", "", "free, busy or unhealthy")
		})
		if err != nil {
			return err
		}
		if uuid == "" || state == "" {
			return errors.New("admin gpu-state: --uuid and --state are required")
		}
		db, err := open(ctx, cfg)
		if err != nil {
			return err
		}
		defer db.Close()
		if err := db.SetGPUState(ctx, uuid, state); err != nil {
			return err
		}
		fmt.Println("ok; offer availability follows within a minute (the refresh job)")
		return nil
	case "create-user":
		var email, pwFile, name string
		var isAdmin bool
		cfg, err := parse("admin create-user", args[1:], func(fs *flag.FlagSet) {
			fs.StringVar(&email, "email", "", "the user's email")
			fs.StringVar(&pwFile, "password-file", "", "a file holding the password (first line); - for standard input")
			fs.StringVar(&name, "name", "", "display name (default: the email's local part)")
			fs.BoolVar(&isAdmin, "admin", false, "make the user a platform admin")
		})
		if err != nil {
			return err
		}
		if email == "" || pwFile == "" {
			return errors.New("admin create-user: --email and --password-file are required")
		}
		password, err := readPassword(pwFile)
		if err != nil {
			return err
		}
		db, err := open(ctx, cfg)
		if err != nil {
			return err
		}
		defer db.Close()
		u, err := accountsService(db, cfg).CreateUser(ctx, email, password, name, isAdmin)
		if err != nil {
			return err
		}
		fmt.Printf("created user %d <%s>%s\n", u.ID, u.Email, map[bool]string{true: " (platform admin)", false: ""}[isAdmin])
		return nil
	case "token":
		var email, name string
		cfg, err := parse("admin token", args[1:], func(fs *flag.FlagSet) {
			fs.StringVar(&email, "email", "", "the user's email")
			fs.StringVar(&name, "name", "", "a name for the token")
		})
		if err != nil {
			return err
		}
		if email == "" || name == "" {
			return errors.New("admin token: --email and --name are required")
		}
		db, err := open(ctx, cfg)
		if err != nil {
			return err
		}
		defer db.Close()
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
	}
	fmt.Print(adminUsage)
	return fmt.Errorf("admin: unknown command %q", args[0])
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
