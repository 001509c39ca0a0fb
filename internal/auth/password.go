package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Sizes of a password hash's parts.
const (
	saltBytes = 16
	keyBytes  = 32
)

// Bounds on what a stored hash may ask for, so that a damaged or hostile
// record cannot make a login allocate gigabytes or run for minutes.
const (
	maxHashMemoryKiB = 1 << 20 // 1 GiB
	maxHashTime      = 64
)

var errBadHash = errors.New("auth: malformed password hash")

// hashPassword derives an argon2id key from password and a fresh random
// salt, and encodes both with the parameters in the PHC string format:
//
//	$argon2id$v=19$m=19456,t=2,p=1$<salt>$<key>
//
// with salt and key in unpadded standard base64. The encoding describes
// itself, so hashes made with other parameters stay verifiable.
func hashPassword(password string, p HashParams) []byte {
	salt := make([]byte, saltBytes)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails
	key := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, keyBytes)
	b64 := base64.RawStdEncoding
	return fmt.Appendf(nil, "$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.MemoryKiB, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// verifyPassword reports whether password matches encoded, comparing the
// keys in constant time.
func verifyPassword(password string, encoded []byte) (bool, error) {
	p, salt, key, err := parseHash(string(encoded))
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// parseHash decodes a PHC argon2id string.
func parseHash(s string) (p HashParams, salt, key []byte, err error) {
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return p, nil, nil, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, fmt.Errorf("%w: version %q", errBadHash, parts[2])
	}
	var threads uint32
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &threads); err != nil {
		return p, nil, nil, fmt.Errorf("%w: parameters %q", errBadHash, parts[3])
	}
	if p.Time < 1 || p.Time > maxHashTime || threads < 1 || threads > 255 ||
		p.MemoryKiB < 8*threads || p.MemoryKiB > maxHashMemoryKiB {
		return p, nil, nil, fmt.Errorf("%w: parameters %q out of range", errBadHash, parts[3])
	}
	p.Threads = uint8(threads)
	b64 := base64.RawStdEncoding
	if salt, err = b64.DecodeString(parts[4]); err != nil || len(salt) < 8 {
		return p, nil, nil, fmt.Errorf("%w: salt", errBadHash)
	}
	if key, err = b64.DecodeString(parts[5]); err != nil || len(key) < 16 || len(key) > 64 {
		return p, nil, nil, fmt.Errorf("%w: key", errBadHash)
	}
	return p, salt, key, nil
}

// generatePassword returns a random password of 26 base32 characters
// (130 bits).
func generatePassword() string { return rand.Text() }

// newSecret returns n random bytes.
func newSecret(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
