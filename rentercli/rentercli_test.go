package rentercli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"suanli/apiclient"
	"suanli/locales"
)

// runCLI runs a command in-process and returns its output and exit code.
func runCLI(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = Run(context.Background(), args, strings.NewReader(""), &o, &e, env)
	return o.String(), e.String(), code
}

// Each error class has its exit code, by the API's error code first and
// by the HTTP status when the code is one the CLI does not know.
func TestExitCodes(t *testing.T) {
	cases := []struct {
		status int
		code   string
		want   int
	}{
		{401, "unauthorised", ExitUnauthorised},
		{401, "unauthorized", ExitUnauthorised},
		{402, "insufficient_funds", ExitInsufficientFunds},
		{409, "no_capacity", ExitNoCapacity},
		{409, "offer_taken", ExitNoCapacity},
		{404, "not_found", ExitNotFound},
		{429, "rate_limited", ExitRateLimited},
		{422, "image_incompatible", ExitImageIncompatible},
		{400, "invalid", ExitInvalid},
		{400, "malformed", ExitInvalid},
		{413, "too_large", ExitInvalid},
		{403, "forbidden", ExitForbidden},
		{409, "conflict", ExitConflict},
		{500, "internal", ExitError},
		{503, "unavailable", ExitError},
		// Unknown codes fall back on the status.
		{402, "", ExitInsufficientFunds},
		{401, "new_code", ExitUnauthorised},
		{404, "", ExitNotFound},
		{429, "", ExitRateLimited},
		{422, "", ExitInvalid},
		{409, "", ExitConflict},
		{502, "", ExitError},
	}
	for _, c := range cases {
		if got := exitCodeOf(&apiError{status: c.status, code: c.code}); got != c.want {
			t.Errorf("%d %q: exit %d, want %d", c.status, c.code, got, c.want)
		}
	}
	if exitCodeOf(nil) != ExitOK || exitCodeOf(errors.New("x")) != ExitError || exitCodeOf(context.Canceled) != ExitInterrupted {
		t.Error("nil, a plain error and a cancelled context: want 0, 1 and 130")
	}
	// The documented table is the constants, once each.
	seen := map[int]bool{}
	for _, e := range exitCodes {
		if seen[e.code] {
			t.Errorf("exit code %d documented twice", e.code)
		}
		seen[e.code] = true
	}
	if len(seen) != 14 {
		t.Errorf("%d exit codes documented, want 14", len(seen))
	}
}

// An API error reads as its class in the reader's language and the
// server's message, naming the field.
func TestAPIErrorMessages(t *testing.T) {
	body := []byte(`{"error":{"code":"insufficient_funds","message":"the balance covers less than an hour","param":"offer_id"}}`)
	err := decodeAPIError(http.StatusPaymentRequired, body)
	en := &app{lang: locales.EN}
	zh := &app{lang: locales.ZH}
	if got := en.describe(err); got != "suanli: insufficient funds: the balance covers less than an hour (offer_id)" {
		t.Errorf("en: %q", got)
	}
	if got := zh.describe(err); got != "suanli: 余额不足：the balance covers less than an hour (offer_id)" {
		t.Errorf("zh-CN: %q", got)
	}
	// An answer that is not the error shape (a proxy's page).
	odd := decodeAPIError(502, []byte("<html>bad gateway</html>"))
	if exitCodeOf(odd) != ExitError || !strings.Contains(odd.Error(), "502 Bad Gateway: <html>bad gateway</html>") {
		t.Errorf("a proxy's page: %v (exit %d)", odd, exitCodeOf(odd))
	}
}

func TestYuan(t *testing.T) {
	for fen, want := range map[int64]string{0: "¥0.00", 5: "¥0.05", 123456: "¥1,234.56", 100000000: "¥1,000,000.00", -250: "−¥2.50", 99999: "¥999.99"} {
		if got := yuan(fen); got != want {
			t.Errorf("yuan(%d) = %q, want %q", fen, got, want)
		}
	}
	for in, want := range map[string]int64{"12": 1200, "12.5": 1250, "¥2.05": 205, "0.01": 1} {
		if got, ok := parseYuan(in); !ok || got != want {
			t.Errorf("parseYuan(%q) = %d %v, want %d", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "-1", "1.234", "1e3", "abc", "12,5"} {
		if _, ok := parseYuan(bad); ok {
			t.Errorf("parseYuan(%q) accepted", bad)
		}
	}
}

// Columns line up on a terminal: a Chinese character takes two columns,
// money is right-aligned.
func TestTableAlignsByDisplayWidth(t *testing.T) {
	tb := newTable("ID", "机房", ">¥/卡·时")
	tb.add("1", "成都 · 天府软件园", "¥3.00")
	tb.add("12", "Beijing", "¥1,234.56")
	var b bytes.Buffer
	if err := tb.write(&b); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ID  机房                 ¥/卡·时\n" +
		"1   成都 · 天府软件园      ¥3.00\n" +
		"12  Beijing            ¥1,234.56\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	for _, l := range lines[1:] {
		if displayWidth(l) != displayWidth(lines[2]) {
			t.Errorf("%q is %d columns wide, want %d", l, displayWidth(l), displayWidth(lines[2]))
		}
	}
}

func TestLanguageChoice(t *testing.T) {
	cases := []struct {
		flag string
		env  map[string]string
		want string
	}{
		{"", map[string]string{}, locales.EN},
		{"", map[string]string{"LANG": "zh_CN.UTF-8"}, locales.ZH},
		{"", map[string]string{"LANG": "zh_TW.UTF-8"}, locales.ZH},
		{"", map[string]string{"LANG": "C"}, locales.EN},
		{"", map[string]string{"LANG": "de_DE.UTF-8"}, locales.EN},
		{"", map[string]string{"LANG": "zh_CN.UTF-8", "LC_MESSAGES": "en_GB.UTF-8"}, locales.EN},
		{"", map[string]string{"LANG": "en_US.UTF-8", "LC_ALL": "zh_CN.UTF-8", "LC_MESSAGES": "en_US.UTF-8"}, locales.ZH},
		{"en", map[string]string{"LC_ALL": "zh_CN.UTF-8"}, locales.EN},
		{"zh-CN", map[string]string{"LANG": "C"}, locales.ZH},
	}
	for _, c := range cases {
		if got := chooseLang(c.flag, c.env); got != c.want {
			t.Errorf("chooseLang(%q, %v) = %s, want %s", c.flag, c.env, got, c.want)
		}
	}
	lang, rest, err := langFlag([]string{"offers", "--lang", "zh-CN", "--json", "--", "--lang=en"})
	if err != nil || lang != "zh-CN" || !slices.Equal(rest, []string{"offers", "--json", "--", "--lang=en"}) {
		t.Errorf("langFlag: %q %v %v", lang, rest, err)
	}
	if _, _, code := runCLI(t, map[string]string{}, "offers", "--lang=fr"); code != ExitUsage {
		t.Errorf("--lang=fr: exit %d, want 2", code)
	}
	// The same error in each language.
	env := map[string]string{"HOME": t.TempDir()}
	_, zh, _ := runCLI(t, env, "rentals", "--lang", "zh-CN")
	_, en, _ := runCLI(t, env, "rentals")
	if !strings.Contains(zh, "未登录") || !strings.Contains(en, "not logged in") {
		t.Errorf("zh-CN %q, en %q", zh, en)
	}
}

// Flags and positional arguments mix; what follows "--" is left alone.
func TestFlagsAmongArguments(t *testing.T) {
	fs := flag.NewFlagSet("rent", flag.ContinueOnError)
	gpus := fs.Int("gpus", 1, "")
	var labels multiFlag
	fs.Var(&labels, "label", "")
	pos, rest, err := parseFlags(fs, []string{"12", "--gpus", "2", "--label", "a=b", "x", "--label=c=d", "--", "cat", "--gpus"})
	if err != nil || *gpus != 2 || !slices.Equal(pos, []string{"12", "x"}) || !slices.Equal(rest, []string{"cat", "--gpus"}) ||
		!slices.Equal(labels, []string{"a=b", "c=d"}) {
		t.Fatalf("pos %v rest %v gpus %d labels %v err %v", pos, rest, *gpus, labels, err)
	}
	m, err := keyValues("label", labels)
	if err != nil || m["a"] != "b" || m["c"] != "d" {
		t.Errorf("keyValues: %v %v", m, err)
	}
	if _, err := keyValues("env", []string{"novalue"}); err == nil {
		t.Error("--env novalue: want an error")
	}
	_, errOut, code := runCLI(t, map[string]string{"HOME": t.TempDir()}, "rentals", "--no-such-flag")
	if code != ExitUsage || !strings.Contains(errOut, "flag provided but not defined: -no-such-flag") {
		t.Errorf("unknown flag: exit %d, %q", code, errOut)
	}
	if _, _, code := runCLI(t, map[string]string{}, "frobnicate"); code != ExitUsage {
		t.Errorf("unknown command: exit %d", code)
	}
	if out, errOut, code := runCLI(t, map[string]string{}, "offers", "-h"); code != ExitOK || out != "" || !strings.Contains(errOut, "--max-price") && !strings.Contains(errOut, "-max-price") {
		t.Errorf("offers -h: exit %d, stderr %q", code, errOut)
	}
}

// `suanli ssh` runs the ssh program with the streams and returns the
// remote command's status; SUANLI_SSH names the program (here a script
// standing in for ssh that prints its arguments).
func TestSSHProgramStatusIsTheCommands(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake-ssh")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"args: $*\"\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	a := &app{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &o, stderr: &e, env: map[string]string{"SUANLI_SSH": fake}, lang: locales.EN}
	err := a.runSSHProgram([]string{"-p", "22", "--", "root@h", "false"})
	if exitCodeOf(err) != 7 || a.describe(err) != "" || o.String() != "args: -p 22 -- root@h false\n" {
		t.Fatalf("exit %d (%q), stdout %q", exitCodeOf(err), a.describe(err), o.String())
	}
	a.env["SUANLI_SSH"] = filepath.Join(dir, "missing")
	if err := a.runSSHProgram(nil); exitCodeOf(err) != ExitError || !strings.Contains(a.describe(err), "cannot find the ssh program") {
		t.Errorf("missing program: %v", err)
	}
}

// The default key is ~/.ssh/id_ed25519.pub, then id_rsa.pub; none is a
// clear usage error; a private key path means its .pub.
func TestFindKey(t *testing.T) {
	home := t.TempDir()
	a := &app{env: map[string]string{"HOME": home}, lang: locales.EN}
	if _, err := a.findKey(""); exitCodeOf(err) != ExitUsage || !strings.Contains(err.Error(), "ssh-keygen -t ed25519") {
		t.Fatalf("no key: %v", err)
	}
	sshDir := filepath.Join(home, ".ssh")
	_ = os.MkdirAll(sshDir, 0o700)
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(sshDir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("id_rsa.pub", "ssh-rsa AAAArsa r@h\n")
	write("id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
	k, err := a.findKey("")
	if err != nil || k.pub != "ssh-rsa AAAArsa r@h" || k.privPath != filepath.Join(sshDir, "id_rsa") {
		t.Fatalf("id_rsa: %+v %v", k, err)
	}
	write("id_ed25519.pub", "ssh-ed25519 AAAAed r@h\n")
	if k, _ := a.findKey(""); k.pub != "ssh-ed25519 AAAAed r@h" || k.privPath != "" {
		t.Errorf("id_ed25519 comes first (and has no private half here): %+v", k)
	}
	if k, err := a.findKey(filepath.Join(sshDir, "id_rsa")); err != nil || k.pubPath != filepath.Join(sshDir, "id_rsa.pub") {
		t.Errorf("a private key's path: %+v %v", k, err)
	}
	write("notakey", "-----BEGIN OPENSSH PRIVATE KEY-----\nxyz\n")
	if _, err := a.findKey(filepath.Join(sshDir, "notakey")); exitCodeOf(err) != ExitUsage {
		t.Errorf("a private key without .pub: %v", err)
	}
}

// Without a terminal, progress is a line per change.
func TestPlainProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, false)
	for _, l := range []string{"rental 1: pending", "rental 1: pending", "rental 1: provisioning", "rental 1: provisioning", "rental 1: provisioning · NVML checks 8/8"} {
		p.show(l)
	}
	p.done()
	if b.String() != "rental 1: pending\nrental 1: provisioning\nrental 1: provisioning · NVML checks 8/8\n" {
		t.Errorf("progress: %q", b.String())
	}
}

// On a terminal, the spinner's line shows the step and is redrawn in
// place (a carriage return, no new line), and cleared at the end.
func TestSpinnerProgress(t *testing.T) {
	w := &lockedBuffer{}
	p := newProgress(w, true)
	p.show("rental 1: provisioning · pulling the image")
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(w.String(), "rental 1: provisioning · pulling the image") {
		select {
		case <-deadline:
			t.Fatalf("the spinner never showed the step: %q", w.String())
		case <-tick.C:
		}
	}
	p.done()
	if out := w.String(); strings.Contains(out, "\n") || !strings.Contains(out, "\r") {
		t.Errorf("the spinner wrote %q: want lines redrawn with \\r, no new line", out)
	}
}

// lockedBuffer is a buffer the spinner's goroutine and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestHelpListsCommandsAndExitCodes(t *testing.T) {
	for _, lang := range locales.Supported {
		h := Help(lang)
		for name := range commands {
			if !strings.Contains(h, "suanli "+name) {
				t.Errorf("%s help lacks %s", lang, name)
			}
		}
		for _, e := range exitCodes {
			if line := fmt.Sprintf("\n  %3d  %s\n", e.code, locales.T(lang, e.key)); !strings.Contains(h, line) {
				t.Errorf("%s help lacks %q", lang, line)
			}
		}
	}
}

// Every message key the CLI names exists in both catalogues, and so does
// every key it builds from an API enum.
func TestEveryCLIMessageExists(t *testing.T) {
	re := regexp.MustCompile(`"(cli\.[a-z0-9_.]+)"`)
	files, _ := filepath.Glob("*.go")
	used := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if !strings.HasSuffix(m[1], ".") {
				used[m[1]] = true
			}
		}
	}
	for _, s := range []apiclient.RentalState{apiclient.RentalStatePending, apiclient.RentalStateProvisioning, apiclient.RentalStateRunning,
		apiclient.RentalStateHostOffline, apiclient.RentalStateMigrating, apiclient.RentalStateStopping, apiclient.RentalStateStopped,
		apiclient.RentalStateFailed, apiclient.RentalStateReleased, apiclient.RentalStateInterrupted} {
		if !s.Valid() {
			t.Errorf("%s is no longer a state", s)
		}
		used["cli.status."+string(s)] = true
	}
	for _, c := range []int{ExitUnauthorised, ExitInsufficientFunds, ExitNoCapacity, ExitNotFound, ExitRateLimited, ExitImageIncompatible, ExitInvalid, ExitForbidden, ExitConflict, ExitError} {
		used["cli.api."+apiErrorClass(c)] = true
	}
	for _, v := range []string{"suanli_server", "suanli_token", "xdg_config_home", "lang", "suanli_ssh"} {
		used["cli.env."+v] = true
	}
	for _, v := range []string{"storage.local", "storage.shared", "volume_status.pending", "volume_status.active", "volume_status.deleted",
		"order_status.open", "order_status.filled", "order_status.expired", "order_status.failed", "order_action.rent", "order_action.notify",
		"alert.budget", "alert.member_cap", "alert.hourly_cap", "alert.low_balance", "alert.runway"} {
		used["cli."+v] = true
	}
	if len(used) < 100 {
		t.Fatalf("found only %d keys: the scan is broken", len(used))
	}
	for k := range used {
		for _, lang := range locales.Supported {
			if !locales.Has(lang, k) {
				t.Errorf("%s: %s missing", lang, k)
			}
		}
	}
	// And no catalogue key is left unused.
	for _, k := range locales.Keys(locales.EN) {
		if strings.HasPrefix(k, "cli.") && !used[k] {
			t.Errorf("%s is in the catalogue but no code uses it", k)
		}
	}
}

// The CLI is built only on the generated client: no file of the
// package makes an HTTP request itself (http.Get, http.NewRequest, a
// client's Do …) except the retrying doer, which the generated client
// sends its requests through.
func TestOnlyTheGeneratedClientMakesRequests(t *testing.T) {
	banned := map[string]bool{"Get": true, "Post": true, "Head": true, "PostForm": true, "NewRequest": true, "NewRequestWithContext": true, "DefaultClient": true}
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "http" && banned[sel.Sel.Name] {
				t.Errorf("%s: http.%s: requests go through the generated client (apiclient)", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			if sel.Sel.Name == "Do" && f != "transport.go" {
				t.Errorf("%s: a Do call outside the doer: requests go through the generated client", fset.Position(sel.Pos()))
			}
			return true
		})
	}
}
