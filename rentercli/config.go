package rentercli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Config is what `suanli login` keeps: the server and the API token, and
// the SSH key each rental was rented with (so that `suanli ssh` logs in
// with the right private key without being told again).
type Config struct {
	// Server is the server's base URL, e.g. https://suanli.example.
	Server string `json:"server"`
	// Token is the API token (Authorization: Bearer).
	Token string `json:"token"`
	// RentalKeys maps a rental id to the public key file it was rented
	// with; the private half is that path without ".pub".
	RentalKeys map[string]string `json:"rental_keys,omitempty"`
}

// The configuration directory and file are the user's only: 0700 and
// 0600, checked and fixed on every write (a token is a password).
const (
	configDirMode  fs.FileMode = 0o700
	configFileMode fs.FileMode = 0o600
	configFileName             = "config.json"
	knownHostsName             = "known_hosts"
)

// configDir is $XDG_CONFIG_HOME/suanli, else $HOME/.config/suanli. The
// XDG base directory specification ignores a relative XDG_CONFIG_HOME.
func configDir(env map[string]string) (string, error) {
	if x := env["XDG_CONFIG_HOME"]; x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "suanli"), nil
	}
	home := env["HOME"]
	if home == "" {
		return "", errors.New("neither XDG_CONFIG_HOME nor HOME is set: no place for the configuration")
	}
	return filepath.Join(home, ".config", "suanli"), nil
}

// loadConfig reads the configuration file; a missing file is an empty
// configuration.
func loadConfig(dir string) (Config, error) {
	var c Config
	b, err := os.ReadFile(filepath.Join(dir, configFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", filepath.Join(dir, configFileName), err)
	}
	return c, nil
}

// saveConfig writes the configuration through a temporary file renamed
// over the old one (a crash leaves the old file or the new, never half),
// making the directory 0700 and the file 0600 whatever they were.
func saveConfig(dir string, c Config) error {
	if err := ensurePrivateDir(dir); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing to remove
	if err := tmp.Chmod(configFileMode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	path := filepath.Join(dir, configFileName)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return os.Chmod(path, configFileMode)
}

// ensurePrivateDir makes dir (and its parents) and sets it to 0700.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, configDirMode); err != nil {
		return err
	}
	return os.Chmod(dir, configDirMode)
}

// settings are the server and token a command uses: SUANLI_SERVER and
// SUANLI_TOKEN override the file's.
type settings struct {
	server, token string
	dir           string
	file          Config
}

// loadSettings reads the file and applies the environment.
func loadSettings(env map[string]string) (settings, error) {
	dir, err := configDir(env)
	if err != nil {
		return settings{}, err
	}
	c, err := loadConfig(dir)
	if err != nil {
		return settings{}, err
	}
	s := settings{server: c.Server, token: c.Token, dir: dir, file: c}
	if v := env["SUANLI_SERVER"]; v != "" {
		s.server = v
	}
	if v := env["SUANLI_TOKEN"]; v != "" {
		s.token = v
	}
	return s, nil
}

// rememberKey records the public key a rental was rented with. It is a
// convenience: failing to write it does not fail the rent.
func rememberKey(dir string, rentalID int64, pubPath string) error {
	c, err := loadConfig(dir)
	if err != nil {
		return err
	}
	if c.RentalKeys == nil {
		c.RentalKeys = map[string]string{}
	}
	c.RentalKeys[strconv.FormatInt(rentalID, 10)] = pubPath
	return saveConfig(dir, c)
}
