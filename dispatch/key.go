package dispatch

import (
	"hash/maphash"
	"strconv"

	"github.com/boomerangd/boomerang/internal/mix"
)

// Key names the family (group, correlation id) a task belongs to. Tasks of
// one correlated family run one at a time in submission order. The zero Key
// is uncorrelated.
//
// A Key is either an integer correlation id or a string group key; both are
// first class. IntKey(7) and StringKey("7") are different families.
type Key struct {
	id   int64
	name string
}

// IntKey returns the key for an integer correlation id. Ids greater than zero
// are correlated; zero and negative ids are uncorrelated.
func IntKey(id int64) Key { return Key{id: id} }

// StringKey returns the key for a string group key. A non-empty name is
// correlated; the empty name is uncorrelated.
func StringKey(name string) Key { return Key{name: name} }

// Correlated reports whether tasks with this key are ordered and gated.
func (k Key) Correlated() bool { return k.name != "" || k.id > 0 }

// String returns the key as it would be written in a log line.
func (k Key) String() string {
	if k.name != "" {
		return strconv.Quote(k.name)
	}
	return strconv.FormatInt(k.id, 10)
}

// hashSeed is fixed for the life of the process so a key always routes to
// the same partition; it differs between processes so string keys from
// untrusted input cannot be chosen to collide.
var hashSeed = maphash.MakeSeed()

// hash returns a well mixed 64-bit hash of a correlated key.
func (k Key) hash() uint64 {
	if k.name != "" {
		return maphash.String(hashSeed, k.name)
	}
	return mix.Mix64(uint64(k.id))
}
