// Package launch is the marketplace as a launcher (SkyPilot, dstack, the
// suanli CLI) drives it: a rental's launch spec (name, labels,
// environment, on-start script) and its rules; stable instance types
// (h100-sxm.2x) and the launch by type, region and filters that rents the
// cheapest offer that takes it; the compact catalogue of the whole
// market; and the state a launcher's state machine follows. Records and
// queries are models/launchstore's.
package launch

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"suanli/apperr"
	"suanli/models/launchstore"
)

// Limits of a launch spec. The on-start script's is twice what launchers
// need (issue 19 asks for at least 8 KB); the environment's bound what an
// agent passes to the Docker Engine in one request.
const (
	MaxNameLen      = 63
	MaxLabels       = 20
	MaxLabelValue   = 255
	MaxEnvVars      = 64
	MaxEnvBytes     = 32 << 10
	MaxOnstartBytes = 16 << 10
)

var (
	// labelKey: lower case, digits and . _ / -, starting with a letter or
	// digit, at most 63 characters: no "=" or "," (a query's label=k=v
	// splits at the first "=").
	labelKey = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]{0,62}$`)
	// envName: a POSIX shell variable's name, at most 128 characters.
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
)

// reservedEnvPrefixes are the environment names a renter may not set:
// the platform's own variables (SUANLI_*, such as the witness token), and
// NVIDIA_*, which the NVIDIA container runtime reads to choose the GPUs
// a container sees (NVIDIA_VISIBLE_DEVICES=all would reach GPUs that
// are not the rental's).
var reservedEnvPrefixes = []string{"SUANLI_", "NVIDIA_"}

// Spec is what a launcher gives a rental beside the offer: a name (free
// text, not unique), labels it finds its rentals by, and the container's
// environment and on-start script (kept sealed; never shown again).
type Spec struct {
	Name    string
	Labels  map[string]string
	Env     map[string]string
	Onstart string
}

// Secrets are the spec's sealed parts.
func (s Spec) Secrets() launchstore.Secrets {
	return launchstore.Secrets{Env: s.Env, Onstart: s.Onstart}
}

// Empty reports whether the spec asks for nothing.
func (s Spec) Empty() bool { return s.Name == "" && len(s.Labels) == 0 && s.Secrets().Empty() }

// Check validates the spec: the first problem is an EINVALID error naming
// its field — name, labels, labels.KEY, env, env.NAME or onstart — and
// never repeating an environment value or the script.
func (s Spec) Check() error {
	if utf8.RuneCountInString(s.Name) > MaxNameLen || !printable(s.Name) {
		return apperr.Invalid("name", fmt.Sprintf("the name must be at most %d printable characters", MaxNameLen))
	}
	if len(s.Labels) > MaxLabels {
		return apperr.Invalid("labels", fmt.Sprintf("at most %d labels (there are %d)", MaxLabels, len(s.Labels)))
	}
	for _, k := range sortedKeys(s.Labels) {
		if !labelKey.MatchString(k) {
			return apperr.Invalid("labels."+clip(k), "a label's key is 1 to 63 of a-z, 0-9 and . _ / -, starting with a letter or digit")
		}
		if v := s.Labels[k]; utf8.RuneCountInString(v) > MaxLabelValue || !printable(v) {
			return apperr.Invalid("labels."+k, fmt.Sprintf("a label's value is at most %d printable characters", MaxLabelValue))
		}
	}
	if len(s.Env) > MaxEnvVars {
		return apperr.Invalid("env", fmt.Sprintf("at most %d environment variables (there are %d)", MaxEnvVars, len(s.Env)))
	}
	total := 0
	for _, k := range sortedKeys(s.Env) {
		if !envName.MatchString(k) {
			return apperr.Invalid("env."+clip(k), "an environment variable's name is a letter or _ then letters, digits or _, at most 128 characters")
		}
		for _, p := range reservedEnvPrefixes {
			if strings.HasPrefix(strings.ToUpper(k), p) {
				return apperr.Invalid("env."+k, fmt.Sprintf("names starting with %s are the platform's", p))
			}
		}
		v := s.Env[k]
		if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
			return apperr.Invalid("env."+k, "an environment variable's value is UTF-8 text without NUL characters")
		}
		total += len(k) + len(v) + 2 // NAME=value and its terminator, as the kernel counts it
	}
	if total > MaxEnvBytes {
		return apperr.Invalid("env", fmt.Sprintf("the environment is %d bytes; at most %d", total, MaxEnvBytes))
	}
	if len(s.Onstart) > MaxOnstartBytes {
		return apperr.Invalid("onstart", fmt.Sprintf("the on-start script is %d bytes; at most %d", len(s.Onstart), MaxOnstartBytes))
	}
	if strings.ContainsRune(s.Onstart, 0) || !utf8.ValidString(s.Onstart) {
		return apperr.Invalid("onstart", "the on-start script is UTF-8 text without NUL characters")
	}
	return nil
}

// ParseLabelFilter reads the list's label parameters ("k=v", each one
// that must match): a parameter without "=" or with a key no label can
// have is an EINVALID error on "label".
func ParseLabelFilter(params []string) (map[string]string, error) {
	if len(params) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if !ok || !labelKey.MatchString(k) {
			return nil, apperr.Invalid("label", "want label=KEY=VALUE, KEY 1 to 63 of a-z, 0-9 and . _ / -")
		}
		if old, seen := out[k]; seen && old != v {
			return nil, apperr.Invalid("label", "label "+k+" is asked for with two values: no rental has both")
		}
		out[k] = v
	}
	return out, nil
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

// clip shortens a key named in an error to 64 bytes (on a character
// boundary): a field name, not an echo of whatever was sent.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// sortedKeys are m's keys in order: the first problem found is the same
// on every request.
func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
