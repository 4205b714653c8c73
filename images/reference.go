package images

import (
	"regexp"
	"strings"

	"suanli/apperr"
)

// The grammar of a Docker image reference, as the distribution project's
// reference package writes it (github.com/distribution/reference,
// regexp.go), restricted to what a rental may run: a tag or a sha256
// digest is required, so that what runs is what was asked for (a bare
// name would mean whatever :latest is on the day).
//
//	reference  := name [":" tag] ["@" digest]
//	name       := [domain "/"] component ["/" component]*
//	domain     := host [":" port]
//	component  := [a-z0-9]+ (separator [a-z0-9]+)*, separator := [._] | "__" | "-"+
//	tag        := [\w][\w.-]{0,127}
//	digest     := "sha256:" 64 hex digits
var referenceRE = func() *regexp.Regexp {
	const (
		alnum           = `[a-z0-9]+`
		separator       = `(?:[._]|__|-+)`
		component       = alnum + `(?:` + separator + alnum + `)*`
		domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		host            = `(?:` + domainComponent + `(?:\.` + domainComponent + `)*|\[[a-fA-F0-9:]+\])`
		domain          = host + `(?::[0-9]+)?`
		name            = `(?:` + domain + `/)?` + component + `(?:/` + component + `)*`
		tag             = `[\w][\w.-]{0,127}`
		digest          = `sha256:[a-f0-9]{64}`
	)
	return regexp.MustCompile(`^(` + name + `)(?::(` + tag + `))?(?:@(` + digest + `))?$`)
}()

// maxNameLen is the longest repository name a registry takes.
const maxNameLen = 255

// CheckReference validates a custom image reference (registry/name:tag,
// name:tag or name@sha256:…); the error is EINVALID on the field
// "image", saying what is wrong.
func CheckReference(ref string) error {
	m := referenceRE.FindStringSubmatch(ref)
	switch {
	case m == nil && referenceRE.MatchString(strings.ToLower(ref)):
		// Valid but for capitals: repository names are lower case.
		return apperr.Field("image", "images.err.reference_case", ref)
	case m == nil:
		return apperr.Field("image", "images.err.reference", ref)
	case len(m[1]) > maxNameLen:
		return apperr.Field("image", "images.err.reference_long", maxNameLen)
	case m[2] == "" && m[3] == "":
		return apperr.Field("image", "images.err.reference_tag", ref)
	}
	return nil
}

// familiar is a reference as Docker lists local images: Docker Hub's
// names without "docker.io/" and official images without "library/", so
// that "docker.io/library/ubuntu:22.04" and "ubuntu:22.04" are the same.
func familiar(ref string) string {
	for _, p := range []string{"docker.io/", "index.docker.io/", "registry-1.docker.io/"} {
		if strings.HasPrefix(ref, p) {
			ref = strings.TrimPrefix(ref, p)
			break
		}
	}
	if rest, ok := strings.CutPrefix(ref, "library/"); ok && !strings.Contains(rest, "/") {
		return rest
	}
	return ref
}
