package rentercli

import (
	"strings"

	"suanli/locales"
)

// chooseLang picks the messages' language: --lang when given, else the
// POSIX locale (LC_ALL, then LC_MESSAGES, then LANG: the first one set
// decides). Chinese (zh, zh_CN.UTF-8, zh_TW, …) reads zh-CN, anything
// else (C, POSIX, en_US.UTF-8, de_DE, unset) English: a terminal that
// did not ask for Chinese gets the language most tools speak.
func chooseLang(flag string, env map[string]string) string {
	if l := locales.Normalize(flag); l != "" {
		return l
	}
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if v := env[k]; v != "" {
			if strings.HasPrefix(strings.ToLower(v), "zh") {
				return locales.ZH
			}
			return locales.EN
		}
	}
	return locales.EN
}

// langFlag removes --lang X / --lang=X from args (before any "--": what
// follows is a remote command) and returns its value.
func langFlag(args []string) (string, []string, error) {
	out := make([]string, 0, len(args))
	lang := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		switch {
		case a == "--lang" || a == "-lang":
			if i+1 >= len(args) {
				return "", nil, errMissingLang
			}
			lang = args[i+1]
			i++
		case strings.HasPrefix(a, "--lang=") || strings.HasPrefix(a, "-lang="):
			_, lang, _ = strings.Cut(a, "=")
		default:
			out = append(out, a)
		}
	}
	if lang != "" && locales.Normalize(lang) == "" {
		return "", nil, errBadLang
	}
	return lang, out, nil
}

// The --lang errors (shown in English: the language is what is wrong).
var (
	errMissingLang = &cliError{code: ExitUsage, msg: "--lang needs a value: zh-CN or en"}
	errBadLang     = &cliError{code: ExitUsage, msg: "--lang is zh-CN or en"}
)
