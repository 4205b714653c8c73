package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
)

const adminUsage = `suanli admin — operator commands (same DATABASE_URL as the server; safe while it runs)

  suanli admin status                          schema version and market counts
  suanli admin gpu-state --uuid U --state S    mark a GPU free, busy or unhealthy
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
	}
	fmt.Print(adminUsage)
	return fmt.Errorf("admin: unknown command %q", args[0])
}
