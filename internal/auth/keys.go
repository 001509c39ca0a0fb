package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// SecretKeyBytes is the size of a secret key: AES-256.
const SecretKeyBytes = 32

// keyIDBytes is the size of the id stored with each sealed record.
const keyIDBytes = 8

// ErrNoKey: a record was sealed with a key the server was not given.
var ErrNoKey = errors.New("auth: signing secrets were sealed with a secret key that is not configured")

// keyring seals signing secrets at rest with AES-256-GCM. The first key
// seals; every key opens, so records sealed with an older key stay
// readable until they are sealed again with the first.
type keyring struct {
	keys []sealKey
}

type sealKey struct {
	id   []byte
	aead cipher.AEAD
}

func newKeyring(keys [][]byte) (*keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("auth: Config.SecretKeys needs at least one key")
	}
	kr := &keyring{}
	for i, k := range keys {
		if len(k) != SecretKeyBytes {
			return nil, fmt.Errorf("auth: secret key %d is %d bytes, want %d", i+1, len(k), SecretKeyBytes)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		kr.keys = append(kr.keys, sealKey{id: KeyID(k), aead: aead})
	}
	return kr, nil
}

// KeyID names a secret key without revealing it: the first bytes of a
// hash of it, as logged and stored with each sealed record.
func KeyID(key []byte) []byte {
	sum := sha256.Sum256(append([]byte("boomerang secret key\x00"), key...))
	return sum[:keyIDBytes]
}

// seal encrypts plain with the first key; client binds it to one record.
func (kr *keyring) seal(plain []byte, client string) (keyID, nonce, sealed []byte) {
	k := kr.keys[0]
	nonce = make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return k.id, nonce, k.aead.Seal(nil, nonce, plain, []byte(client))
}

// open decrypts with the key named keyID.
func (kr *keyring) open(keyID, nonce, sealed []byte, client string) ([]byte, error) {
	for _, k := range kr.keys {
		if string(k.id) != string(keyID) {
			continue
		}
		if len(nonce) != k.aead.NonceSize() {
			return nil, fmt.Errorf("auth: client %q: malformed sealed secrets", client)
		}
		plain, err := k.aead.Open(nil, nonce, sealed, []byte(client))
		if err != nil {
			return nil, fmt.Errorf("auth: client %q: sealed secrets do not open: %w", client, err)
		}
		return plain, nil
	}
	return nil, fmt.Errorf("%w (client %q, key id %x)", ErrNoKey, client, keyID)
}

// current reports whether keyID is the sealing key.
func (kr *keyring) current(keyID []byte) bool { return string(kr.keys[0].id) == string(keyID) }

// GenerateKey returns a new random secret key.
func GenerateKey() []byte {
	k := make([]byte, SecretKeyBytes)
	_, _ = rand.Read(k)
	return k
}

// EncodeKey writes a key as 64 hex digits, the form ParseKeys reads.
func EncodeKey(k []byte) string { return hex.EncodeToString(k) }

// ParseKeys reads secret keys from text: one per line (or separated by
// commas or spaces), each 64 hex digits or 32 bytes in standard base64;
// "#" starts a comment that runs to the end of the line. The first key
// seals; the others only open what older keys sealed.
func ParseKeys(text string) ([][]byte, error) {
	var keys [][]byte
	for line := range strings.SplitSeq(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, field := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' }) {
			k, err := parseKey(field)
			if err != nil {
				return nil, fmt.Errorf("secret key %d: %w", len(keys)+1, err)
			}
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no secret key found")
	}
	return keys, nil
}

func parseKey(s string) ([]byte, error) {
	if k, err := hex.DecodeString(s); err == nil && len(k) == SecretKeyBytes {
		return k, nil
	}
	if k, err := base64.StdEncoding.DecodeString(s); err == nil && len(k) == SecretKeyBytes {
		return k, nil
	}
	return nil, fmt.Errorf("want %d bytes as 64 hex digits or in base64 (e.g. from \"openssl rand -hex 32\")", SecretKeyBytes)
}
