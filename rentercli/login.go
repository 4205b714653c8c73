package rentercli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"golang.org/x/term"
)

// runLogin asks for what --server and --token do not give, checks the
// token (GET /api/v1/me) and only then saves both.
func runLogin(a *app, args []string) error {
	fs := a.flags()
	server := fs.String("server", "", a.T("cli.flag.server"))
	token := fs.String("token", "", a.T("cli.flag.token"))
	if err := a.parseNoArgs(fs, args); err != nil {
		return err
	}
	s, err := loadSettings(a.env)
	if err != nil {
		return err
	}
	in := bufio.NewReader(a.stdin)
	// Prompts only where someone reads them: piped in, the server's URL
	// (when --server is not given) and the token are a line each.
	prompt := func(s string) {
		if isTerminal(a.stdin) {
			fmt.Fprint(a.stderr, s)
		}
	}
	if *server == "" {
		def := s.server
		if def != "" {
			prompt(a.T("cli.login.server_prompt_default", def))
		} else {
			prompt(a.T("cli.login.server_prompt"))
		}
		line, err := readLine(in)
		if err != nil && line == "" && def == "" {
			return a.usageErr("cli.err.no_server")
		}
		*server = line
		if *server == "" {
			*server = def
		}
	}
	srv, err := normaliseServer(*server)
	if err != nil {
		return a.usageErr("cli.err.bad_server", *server, err)
	}
	a.warnPlainHTTP(srv)
	if *token == "" {
		prompt(a.T("cli.login.token_prompt", srv+"/account"))
		*token, err = a.readSecret(in)
		prompt("\n")
		if err != nil && *token == "" {
			return a.usageErr("cli.err.no_token")
		}
	}
	*token = strings.TrimSpace(*token)
	if *token == "" {
		return a.usageErr("cli.err.no_token")
	}
	c, err := a.newClient(srv, *token)
	if err != nil {
		return err
	}
	res, err := c.GetMeWithResponse(a.ctx)
	if err := a.answer(err, res, http.StatusOK); err != nil {
		return err
	}
	if res.JSON200 == nil {
		return a.errorf(ExitError, "cli.err.unexpected", "GET /api/v1/me")
	}
	file := s.file
	file.Server, file.Token = srv, *token
	if err := saveConfig(s.dir, file); err != nil {
		return a.errorf(ExitError, "cli.err.save_config", s.dir, err)
	}
	fmt.Fprintln(a.stdout, a.T("cli.login.done", srv, res.JSON200.Email, s.dir+"/"+configFileName))
	if a.env["SUANLI_TOKEN"] != "" || a.env["SUANLI_SERVER"] != "" {
		fmt.Fprintln(a.stderr, a.T("cli.login.env_overrides"))
	}
	return nil
}

// runLogout forgets the saved token (the server keeps it valid: revoke it
// on the account page).
func runLogout(a *app, args []string) error {
	fs := a.flags()
	if err := a.parseNoArgs(fs, args); err != nil {
		return err
	}
	dir, err := configDir(a.env)
	if err != nil {
		return err
	}
	c, err := loadConfig(dir)
	if err != nil {
		return err
	}
	if c.Token == "" {
		fmt.Fprintln(a.stdout, a.T("cli.logout.none"))
		return nil
	}
	c.Token = ""
	if err := saveConfig(dir, c); err != nil {
		return a.errorf(ExitError, "cli.err.save_config", dir, err)
	}
	fmt.Fprintln(a.stdout, a.T("cli.logout.done", c.Server))
	return nil
}

// readSecret reads the token: without echo when standard input is a
// terminal, else one line (a pipe, a file: `suanli login < token.txt`).
func (a *app) readSecret(in *bufio.Reader) (string, error) {
	if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		b, err := term.ReadPassword(int(f.Fd()))
		return strings.TrimSpace(string(b)), err
	}
	return readLine(in)
}

// readLine reads one line without its line end; the last line of a file
// may lack one.
func readLine(in *bufio.Reader) (string, error) {
	line, err := in.ReadString('\n')
	line = strings.TrimSpace(line)
	if errors.Is(err, io.EOF) && line != "" {
		return line, nil
	}
	return line, err
}
