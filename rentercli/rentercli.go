// Package rentercli is the renter's command line in the suanli binary:
// login, offers, rent, rentals, ssh, stop, start, release, logs,
// volumes, images, wallet and orders. It reaches the server only through
// the client generated from the published OpenAPI document (package
// apiclient), as any other program would: what the CLI can do, a
// launcher can do with the same document.
package rentercli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"

	"suanli/locales"
)

// command is one renter command: its synopsis and description keys (for
// help) and what it does with its arguments.
type command struct {
	synopsis string
	about    string
	run      func(a *app, args []string) error
}

// commands are the renter commands, by name.
var commands = map[string]command{
	"login":   {"suanli login [--server URL] [--token T]", "cli.help.login", runLogin},
	"logout":  {"suanli logout", "cli.help.logout", runLogout},
	"offers":  {"suanli offers [--gpu SLUG]... [--city C] [--region R] [--max-price YUAN] [--interruptible] [--available] [--min-gpus N] [--min-vram GB] [--sort KEY] [--page N] [--json]", "cli.help.offers", runOffers},
	"types":   {"suanli types [--json]", "cli.help.types", runTypes},
	"rent":    {"suanli rent OFFER|TYPE [--gpus N] [--image IMG] [--volume ID | --volume-gb N] [--bid YUAN] [--port P]... [--ssh-key PATH] [--name N] [--label k=v]... [--env K=V]... [--onstart FILE] [--region R] [--city C] [--max-price YUAN] [--exclude-node ID]... [--sla standard|premium] [--org ID] [--no-wait] [--timeout 15m] [--json]", "cli.help.rent", runRent},
	"rentals": {"suanli rentals [--label k=v]... [--name N] [--all] [--org ID] [--page N] [--json]", "cli.help.rentals", runRentals},
	"ssh":     {"suanli ssh RENTAL [--ssh-key PATH] [--org ID] [-- CMD...]", "cli.help.ssh", runSSH},
	"stop":    {"suanli stop RENTAL [--org ID] [--no-wait] [--timeout 5m] [--json]", "cli.help.stop", runStop},
	"start":   {"suanli start RENTAL [--no-gpu] [--volume ID] [--org ID] [--no-wait] [--timeout 15m] [--json]", "cli.help.start", runStart},
	"release": {"suanli release RENTAL [--delete-volume] [--org ID] [--no-wait] [--timeout 5m] [--json]", "cli.help.release", runRelease},
	"logs":    {"suanli logs RENTAL [-f] [--tail N] [--timestamps] [--org ID]", "cli.help.logs", runLogs},
	"volumes": {"suanli volumes [--org ID] [--json]", "cli.help.volumes", runVolumes},
	"images":  {"suanli images [--offer ID] [--json]", "cli.help.images", runImages},
	"wallet":  {"suanli wallet [--org ID] [--json]", "cli.help.wallet", runWallet},
	"orders":  {"suanli orders [--org ID] [--json] | suanli orders delete ID", "cli.help.orders", runOrders},
}

// IsCommand reports whether name is a renter command (main dispatches
// those to Run).
func IsCommand(name string) bool {
	_, ok := commands[name]
	return ok
}

// app is one run of a command: its streams, environment and language.
type app struct {
	ctx            context.Context
	stdin          io.Reader
	stdout, stderr io.Writer
	env            map[string]string
	lang           string
	// pollEvery is how often a wait reads the rental: a second, well
	// below the per-token read limit (20 a second).
	pollEvery time.Duration
	// cmd is the command being run (its name and synopsis, for its
	// flags' help).
	cmd  command
	name string
	// warnedPlain: the plain-HTTP warning was given (once a command).
	warnedPlain bool
}

// Run runs the renter command args[0] with the rest of args and returns
// the process's exit code (the Exit… constants; `suanli ssh` returns the
// remote command's). env is the process environment as a map (HOME,
// XDG_CONFIG_HOME, SUANLI_SERVER, SUANLI_TOKEN, LANG, PATH, …): nothing
// else of the process's environment is read, so a test gives its own.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env map[string]string) int {
	lang, args, err := langFlag(args)
	a := &app{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, env: env, lang: chooseLang(lang, env), pollEvery: time.Second}
	if err != nil {
		return a.fail(err)
	}
	if len(args) == 0 {
		_, _ = io.WriteString(stderr, Help(a.lang))
		return ExitUsage
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return a.fail(a.usageErr("cli.err.unknown_command", args[0]))
	}
	a.cmd, a.name = cmd, args[0]
	err = cmd.run(a, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return a.fail(err)
}

// fail writes err's message (if any) to standard error and returns its
// exit code.
func (a *app) fail(err error) int {
	if err == nil {
		return ExitOK
	}
	if msg := a.describe(err); msg != "" {
		fmt.Fprintln(a.stderr, msg)
	}
	return exitCodeOf(err)
}

// describe is the message for err in the reader's language: an API error
// is its class in words and the server's message (in English, naming
// the field at fault).
func (a *app) describe(err error) string {
	var ce *cliError
	var ae *apiError
	switch {
	case errors.As(err, &ce):
		if ce.msg == "" {
			return ""
		}
		return "suanli: " + ce.msg
	case errors.As(err, &ae):
		return "suanli: " + a.T("cli.api."+apiErrorClass(exitCodeFor(ae)), ae.Error())
	case errors.Is(err, context.Canceled):
		return "suanli: " + a.T("cli.err.interrupted")
	}
	return "suanli: " + err.Error()
}

// apiErrorClass names an exit code's message (cli.api.CLASS).
func apiErrorClass(code int) string {
	switch code {
	case ExitUnauthorised:
		return "unauthorised"
	case ExitInsufficientFunds:
		return "insufficient_funds"
	case ExitNoCapacity:
		return "no_capacity"
	case ExitNotFound:
		return "not_found"
	case ExitRateLimited:
		return "rate_limited"
	case ExitImageIncompatible:
		return "image_incompatible"
	case ExitInvalid:
		return "invalid"
	case ExitForbidden:
		return "forbidden"
	case ExitConflict:
		return "conflict"
	}
	return "error"
}

// T is the message key in the reader's language.
func (a *app) T(key string, args ...any) string { return locales.T(a.lang, key, args...) }

// usageErr is a usage error (exit 2) with a message.
func (a *app) usageErr(key string, args ...any) error {
	return &cliError{code: ExitUsage, msg: a.T(key, args...)}
}

// errorf is an error of the given exit code with a message.
func (a *app) errorf(code int, key string, args ...any) error {
	return &cliError{code: code, msg: a.T(key, args...)}
}

// flags is a flag set for the running command (see newFlags).
func (a *app) flags() *flag.FlagSet { return newFlags(a.name, a.cmd.synopsis, a.stderr) }

// parse parses a command's flags (see parseFlags); a wrong flag, which
// the flag package has reported, is a usage error without more words.
func (a *app) parse(fs *flag.FlagSet, args []string) (pos, rest []string, err error) {
	pos, rest, err = parseFlags(fs, args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		err = &cliError{code: ExitUsage}
	}
	return pos, rest, err
}

// parseNoArgs parses the flags of a command that takes no positional
// argument (parse); one given is a usage error naming it.
func (a *app) parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, _, err := a.parse(fs, args)
	if err == nil && len(pos) > 0 {
		err = a.usageErr("cli.err.extra_args", strings.Join(pos, " "))
	}
	return err
}

// isTerminal reports whether f is a terminal (a spinner, a hidden
// password prompt).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// Help is the renter commands' part of `suanli help` in lang: the
// commands, the exit codes and the environment variables.
func Help(lang string) string {
	var b strings.Builder
	b.WriteString(locales.T(lang, "cli.help.title") + "\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := commands[n]
		fmt.Fprintf(&b, "  %s\n      %s\n", c.synopsis, locales.T(lang, c.about))
	}
	b.WriteString("\n" + locales.T(lang, "cli.help.common") + "\n")
	b.WriteString("\n" + locales.T(lang, "cli.help.exit_codes") + "\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, "  %3d  %s\n", e.code, locales.T(lang, e.key))
	}
	b.WriteString("\n" + locales.T(lang, "cli.help.environment") + "\n")
	for _, v := range []string{"SUANLI_SERVER", "SUANLI_TOKEN", "XDG_CONFIG_HOME", "LANG", "SUANLI_SSH"} {
		fmt.Fprintf(&b, "  %-16s %s\n", v, locales.T(lang, "cli.env."+strings.ToLower(v)))
	}
	b.WriteString("\n" + locales.T(lang, "cli.help.docs") + "\n")
	return b.String()
}

// HelpLang is the language of `suanli help` for the process environment
// env (as Run chooses it, without --lang).
func HelpLang(env map[string]string) string { return chooseLang("", env) }

// EnvMap turns a process environment (os.Environ) into Run's map.
func EnvMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
