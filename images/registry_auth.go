package images

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/distribution/reference"
	"gorm.io/gorm"

	"suanli/apperr"
	"suanli/models"
	"suanli/models/rentalstore"
	"suanli/secrets"
)

// RegistryAuth is a renter's credential for pulling a custom image from a
// private registry, as given with a rent request. Once stored, its
// password is sealed and never shown again: only the username is.
type RegistryAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// String, GoString, LogValue and MarshalJSON show the username only, so
// that a credential printed, logged or encoded by mistake does not show
// its password.
func (a RegistryAuth) String() string {
	return "registry credential of " + strconv.Quote(a.Username) + " (password hidden)"
}

// GoString is String (for %#v).
func (a RegistryAuth) GoString() string { return a.String() }

// LogValue implements slog.LogValuer.
func (a RegistryAuth) LogValue() slog.Value {
	return slog.GroupValue(slog.String("username", a.Username), slog.Bool("password_set", a.Password != ""))
}

// MarshalJSON encodes the username and whether a password is set.
func (a RegistryAuth) MarshalJSON() ([]byte, error) {
	return json.Marshal(RegistryAuthShown{Username: a.Username, Set: a.Password != ""})
}

// RegistryAuthShown is all that is ever shown of a rental's registry
// credential (the API's registry_auth): its username, and Set — always
// true for a stored one — for the password kept sealed.
type RegistryAuthShown struct {
	Username string `json:"username"`
	Set      bool   `json:"set"`
}

// RegistryAuthPurpose names the platform key's box that seals registry
// passwords (secrets.Key.Box).
const RegistryAuthPurpose = "registry-credentials"

// The longest username and password taken. Registry tokens can be long
// (an ECR token is about 2 KB), but nothing real comes near these.
const (
	MaxRegistryUsername = 255
	MaxRegistryPassword = 4096
)

// registryAuthField is the field that every refusal names: the API's
// "registry_auth" object, and the rent form's credentials beside the
// custom image.
const registryAuthField = "registry_auth"

// CheckRegistryAuth validates a credential for the image chosen: only a
// custom image takes one; the username is 1–255 characters without a
// colon (HTTP basic authentication splits at the first), the password
// 1–4096 bytes, both valid UTF-8 without control characters (NUL, line
// breaks). Refusals are EINVALID on "registry_auth" and never repeat the
// password. A nil box (no platform key configured) refuses every
// credential: it could not be kept.
func CheckRegistryAuth(c Choice, a RegistryAuth, box *secrets.Box) error {
	switch {
	case !c.Custom:
		return apperr.Field(registryAuthField, "images.err.registry_auth_custom_only")
	case box == nil:
		return apperr.Field(registryAuthField, "images.err.registry_auth_unavailable")
	case a.Username == "":
		return apperr.Field(registryAuthField, "images.err.registry_username_missing")
	case a.Password == "":
		return apperr.Field(registryAuthField, "images.err.registry_password_missing")
	case len(a.Username) > MaxRegistryUsername:
		return apperr.Field(registryAuthField, "images.err.registry_username_long", MaxRegistryUsername)
	case len(a.Password) > MaxRegistryPassword:
		return apperr.Field(registryAuthField, "images.err.registry_password_long", MaxRegistryPassword)
	case !printable(a.Username) || strings.ContainsRune(a.Username, ':') || strings.TrimSpace(a.Username) != a.Username:
		return apperr.Field(registryAuthField, "images.err.registry_username")
	case !printable(a.Password):
		return apperr.Field(registryAuthField, "images.err.registry_password")
	}
	return nil
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, unicode.IsControl)
}

// sealContext binds a sealed password to its rental and username, so
// that it opens for no other row, and for no other username.
func sealContext(rentalID int64, username string) []byte {
	return fmt.Appendf(nil, "rental:%d\x00user:%s", rentalID, username)
}

// StoreRegistryAuth keeps, in tx, the rental's credential (checked with
// CheckRegistryAuth): the username as given, the password sealed with box.
func StoreRegistryAuth(tx *gorm.DB, box *secrets.Box, rentalID int64, a RegistryAuth, now time.Time) error {
	return rentalstore.InsertRegistryAuth(tx, &models.RentalRegistryAuth{RentalID: rentalID, Username: a.Username,
		SealedPassword: box.Seal([]byte(a.Password), sealContext(rentalID, a.Username)), CreatedAt: now})
}

// ErrRegistryAuthSealed is a stored credential the server cannot open:
// no platform key is configured, or it is not the key that sealed it.
var ErrRegistryAuthSealed = errors.New("the registry credentials of this rental cannot be opened with the platform's secret key " +
	"(SUANLI_SECRET_KEY is not set, or is not the key they were stored with): rent again with them")

// PullAuth returns, in tx, Docker's X-Registry-Auth value for pulling ref
// with the rental's stored credential — the base64url of its JSON
// username, password and server address — or "" when the rental has
// none. A credential that does not open with box is
// ErrRegistryAuthSealed. The value is for the agent's pull only: it is
// never stored or logged.
func PullAuth(tx *gorm.DB, box *secrets.Box, rentalID int64, ref string) (string, error) {
	a, found, err := rentalstore.RegistryAuthOf(tx, rentalID)
	if err != nil || !found {
		return "", err
	}
	if box == nil {
		return "", ErrRegistryAuthSealed
	}
	pw, err := box.Open(a.SealedPassword, sealContext(rentalID, a.Username))
	if err != nil {
		return "", ErrRegistryAuthSealed
	}
	b, err := json.Marshal(struct {
		Username      string `json:"username"`
		Password      string `json:"password"`
		ServerAddress string `json:"serveraddress"`
	}{a.Username, string(pw), RegistryServer(ref)})
	if err != nil {
		return "", err
	}
	return base64.URLEncoding.EncodeToString(b), nil
}

// dockerHubServer is Docker Hub's address in registry credentials.
const dockerHubServer = "https://index.docker.io/v1/"

// RegistryServer is the registry a reference is pulled from, as Docker
// names it in credentials: its first component when that is a host
// (it has a dot or a port, or is localhost), else Docker Hub.
func RegistryServer(ref string) string {
	first, _, ok := strings.Cut(ref, "/")
	if !ok || !(strings.ContainsAny(first, ".:") || first == "localhost" || strings.HasPrefix(first, "[")) {
		return dockerHubServer
	}
	switch first {
	case "docker.io", "index.docker.io", "registry-1.docker.io":
		return dockerHubServer
	}
	return first
}

// RepositoryOf is the repository a reference names as the daemon resolves
// it, without tag or digest ("lab/x:1", "docker.io/lab/x@sha256:…" →
// "docker.io/lab/x"); a reference that does not parse is itself.
func RepositoryOf(ref string) string {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	return n.Name()
}
