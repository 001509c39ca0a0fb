package auth

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestHashVerify(t *testing.T) {
	t.Parallel()
	h := hashPassword("correct horse", lightHash)
	if !bytes.HasPrefix(h, []byte("$argon2id$v=19$m=64,t=1,p=1$")) {
		t.Fatalf("hash %q is not a PHC argon2id string with its parameters", h)
	}
	if bytes.Contains(h, []byte("correct horse")) {
		t.Fatal("hash contains the password")
	}
	if ok, err := verifyPassword("correct horse", h); err != nil || !ok {
		t.Fatalf("verify right password = %v, %v", ok, err)
	}
	if ok, err := verifyPassword("correct horsf", h); err != nil || ok {
		t.Fatalf("verify wrong password = %v, %v", ok, err)
	}
	if h2 := hashPassword("correct horse", lightHash); bytes.Equal(h, h2) {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	// A hash made with other parameters still verifies: they travel with it.
	other := hashPassword("pw-other-params", HashParams{Time: 2, MemoryKiB: 128, Threads: 2})
	if ok, err := verifyPassword("pw-other-params", other); err != nil || !ok {
		t.Fatalf("verify with other parameters = %v, %v", ok, err)
	}
}

func TestParseHashRejects(t *testing.T) {
	t.Parallel()
	good := string(hashPassword("x", lightHash))
	parts := strings.Split(good, "$")
	for name, s := range map[string]string{
		"empty":        "",
		"bcrypt":       "$2a$10$abcdefghijklmnopqrstuu",
		"argon2i":      strings.Replace(good, "argon2id", "argon2i", 1),
		"version":      strings.Replace(good, "v=19", "v=16", 1),
		"no params":    strings.Replace(good, parts[3], "", 1),
		"huge memory":  strings.Replace(good, "m=64", "m=99999999", 1),
		"zero time":    strings.Replace(good, "t=1", "t=0", 1),
		"zero threads": strings.Replace(good, "p=1", "p=0", 1),
		"bad salt":     strings.Replace(good, parts[4], "!!!", 1),
		"short key":    strings.Replace(good, parts[5], "AAAA", 1),
		"extra part":   good + "$x",
	} {
		if _, _, _, err := parseHash(s); !errors.Is(err, errBadHash) {
			t.Errorf("%s: parseHash(%q) = %v, want errBadHash", name, s, err)
		}
	}
}

// FuzzParseHash checks that no stored hash, however damaged, panics the
// parser or gets past it with parameters that would let a login allocate
// or compute without bound.
func FuzzParseHash(f *testing.F) {
	f.Add(string(hashPassword("x", lightHash)))
	f.Add("$argon2id$v=19$m=1048576,t=64,p=255$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("$argon2id$v=19$m=-1,t=1,p=1$$")
	f.Fuzz(func(t *testing.T, s string) {
		p, salt, key, err := parseHash(s)
		if err != nil {
			return
		}
		if p.Time < 1 || p.Time > maxHashTime || p.MemoryKiB > maxHashMemoryKiB || p.Threads < 1 ||
			len(salt) < 8 || len(key) < 16 || len(key) > 64 {
			t.Fatalf("parseHash(%q) accepted %+v salt %d key %d", s, p, len(salt), len(key))
		}
	})
}
