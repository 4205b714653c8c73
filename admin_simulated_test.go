package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"suanli/models"
)

// `admin create-user … --provider NAME --simulated` makes a test provider
// whose nodes run simulated agents; without --simulated the provider is a
// real one; --simulated alone is refused.
func TestAdminCreateUserSimulatedProvider(t *testing.T) {
	withoutOwnSettings(t)
	ctx := context.Background()
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("operator-pass-2026\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := admin(ctx, []string{"create-user", "--data-dir", dir, "--email", "lone@example.com", "--password-file", pw, "--simulated"}); err == nil {
		t.Error("--simulated without --provider was accepted")
	}
	if err := admin(ctx, []string{"create-user", "--data-dir", dir, "--email", "test@example.com", "--password-file", pw, "--provider", "Test GPU Co", "--simulated"}); err != nil {
		t.Fatal(err)
	}
	if err := admin(ctx, []string{"create-user", "--data-dir", dir, "--email", "real@example.com", "--password-file", pw, "--provider", "Real GPU Co"}); err != nil {
		t.Fatal(err)
	}
	db, err := models.Open(ctx, "sqlite", filepath.Join(dir, "suanli.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, want := range map[string]bool{"Test GPU Co": true, "Real GPU Co": false} {
		var p models.Provider
		if err := db.R.Where("name_zh = ?", name).First(&p).Error; err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Simulated != want {
			t.Errorf("%s: simulated %v, want %v", name, p.Simulated, want)
		}
	}
}
