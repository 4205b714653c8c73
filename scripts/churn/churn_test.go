package main

import (
	"io"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// The server refuses a rent without a key it can parse.
func TestSSHKeyParses(t *testing.T) {
	k := newSSHKey()
	if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil {
		t.Fatalf("%q: %v", k, err)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	var l []time.Duration
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	for p, want := range map[float64]time.Duration{50: 50 * time.Millisecond, 99: 99 * time.Millisecond, 100: 100 * time.Millisecond, 0: time.Millisecond} {
		if got := percentile(l, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %v", got)
	}
}

func TestFlags(t *testing.T) {
	t.Setenv("SUANLI_TOKEN", "")
	c, err := parseFlags([]string{"-token", "a, b", "-offers", "3,4", "-rate", "2.5"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.tokens) != 2 || c.tokens[1] != "b" || len(c.offers) != 2 || c.offers[1] != 4 || c.rate != 2.5 {
		t.Errorf("parsed %+v", c)
	}
	for _, bad := range [][]string{{}, {"-token", "x", "-rate", "0"}, {"-token", "x", "-offers", "a"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
