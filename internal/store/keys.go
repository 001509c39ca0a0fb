package store

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Key-space tags: the first byte of every key. See doc.go for the layout.
const (
	tagTask        byte = 't' // t|shard|id                  → Task
	tagDue         byte = 'd' // d|shard|due|id              → group ref of an ordered task, else empty
	tagOrder       byte = 'o' // o|shard|client|group|due|seq|id → empty
	tagClientIndex byte = 'c' // c|shard|client|id           → empty
	tagGroup       byte = 'g' // g|shard|client|group        → Group
	tagBlocked     byte = 'b' // b|shard|client|group        → empty: blocked groups
	tagIdempotency byte = 'i' // i|shard|client|key          → id, created
	tagIdemExpiry  byte = 'x' // x|shard|created|client|key  → empty
	tagDeadLetter  byte = 'q' // q|shard|id                  → DeadLetter
	tagDeadClient  byte = 'r' // r|shard|client|id           → failed, flags
	tagShardMeta   byte = 'm' // m|shard                     → ShardMeta
	tagClient      byte = 'k' // k|client                    → Client
	tagReplace     byte = 'p' // p|shard|client|group\x00key|id → empty
	tagSession     byte = 's' // s|session key               → auth's session record
)

// schemaKey sorts before every tagged key.
var schemaKey = []byte("\x00schema")

// shardsKey holds the store's number of shards as a uvarint; it sorts
// before every tagged key too.
var shardsKey = []byte("\x00shards")

// keyParts is a decoded key. Which fields mean something depends on tag.
type keyParts struct {
	tag   byte
	shard uint16
	id    uint64
	due   int64  // due time; the creation time for tagIdemExpiry
	seq   uint64 // tagOrder
	a, b  string // client and group or idempotency key; client id for tagClient
}

var errBadKey = errors.New("malformed key")

// Encoding.

func appendShard(k []byte, tag byte, shard uint16) []byte {
	return binary.BigEndian.AppendUint16(append(k, tag), shard)
}

func appendString(k []byte, s string) []byte {
	return append(binary.AppendUvarint(k, uint64(len(s))), s...)
}

// appendDue encodes a due time so that byte order is numeric order:
// flipping the sign bit puts negative times before positive ones.
func appendDue(k []byte, due int64) []byte {
	return binary.BigEndian.AppendUint64(k, uint64(due)^1<<63)
}

func taskKey(id uint64) []byte {
	return binary.BigEndian.AppendUint64(appendShard(make([]byte, 0, 11), tagTask, ShardOf(id)), id)
}

func dueKey(due int64, id uint64) []byte { return appendDueKey(make([]byte, 0, 19), due, id) }

func appendDueKey(k []byte, due int64, id uint64) []byte {
	k = appendDue(appendShard(k, tagDue, ShardOf(id)), due)
	return binary.BigEndian.AppendUint64(k, id)
}

func clientIndexKey(tag byte, client string, id uint64) []byte {
	return appendClientIndexKey(make([]byte, 0, 16+len(client)), tag, client, id)
}

func appendClientIndexKey(k []byte, tag byte, client string, id uint64) []byte {
	k = appendString(appendShard(k, tag, ShardOf(id)), client)
	return binary.BigEndian.AppendUint64(k, id)
}

func groupKey(shard uint16, client, group string) []byte {
	return namedKey(tagGroup, shard, client, group)
}

func blockedKey(shard uint16, client, group string) []byte {
	return namedKey(tagBlocked, shard, client, group)
}

// namedKey is tag|shard|a|b for the key spaces named by two strings.
func namedKey(tag byte, shard uint16, a, b string) []byte {
	k := appendShard(make([]byte, 0, 7+len(a)+len(b)), tag, shard)
	return appendString(appendString(k, a), b)
}

func idempotencyKey(shard uint16, client, key string) []byte {
	return namedKey(tagIdempotency, shard, client, key)
}

// orderKey places a task of an ordered group in its group's order:
// (due, seq), then id, which keeps the key unique even for tasks written
// without a sequence.
func orderKey(shard uint16, client, group string, due int64, seq, id uint64) []byte {
	k := appendDue(namedKey(tagOrder, shard, client, group), due)
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(k, seq), id)
}

func idemExpiryKey(shard uint16, createdMs int64, client, key string) []byte {
	k := appendDue(appendShard(make([]byte, 0, 13+len(client)+len(key)), tagIdemExpiry, shard), createdMs)
	return appendString(appendString(k, client), key)
}

func deadLetterKey(id uint64) []byte {
	return binary.BigEndian.AppendUint64(appendShard(make([]byte, 0, 11), tagDeadLetter, ShardOf(id)), id)
}

func shardMetaKey(shard uint16) []byte { return appendShard(make([]byte, 0, 3), tagShardMeta, shard) }

func clientKey(id string) []byte {
	return appendString(append(make([]byte, 0, 3+len(id)), tagClient), id)
}

func sessionKey(key []byte) []byte {
	return append(binary.AppendUvarint(append(make([]byte, 0, 3+len(key)), tagSession), uint64(len(key))), key...)
}

// shardPrefix is the prefix of every key of one key space and shard.
func shardPrefix(tag byte, shard uint16) []byte { return appendShard(nil, tag, shard) }

// clientPrefix is the prefix of one client's entries in a client index.
func clientPrefix(tag byte, shard uint16, client string) []byte {
	return appendString(appendShard(nil, tag, shard), client)
}

// prefixEnd returns the smallest key greater than every key with prefix p,
// or nil when there is none.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// encode is the inverse of decodeKey.
func (p keyParts) encode() []byte {
	switch p.tag {
	case tagTask:
		return taskKey(p.id)
	case tagDue:
		return dueKey(p.due, p.id)
	case tagClientIndex, tagDeadClient:
		return clientIndexKey(p.tag, p.a, p.id)
	case tagGroup:
		return groupKey(p.shard, p.a, p.b)
	case tagBlocked:
		return blockedKey(p.shard, p.a, p.b)
	case tagIdempotency:
		return idempotencyKey(p.shard, p.a, p.b)
	case tagOrder:
		return orderKey(p.shard, p.a, p.b, p.due, p.seq, p.id)
	case tagIdemExpiry:
		return idemExpiryKey(p.shard, p.due, p.a, p.b)
	case tagRaftEntry:
		return raftEntryKey(p.shard, p.seq)
	case tagRaftHardState, tagRaftTruncated:
		return appendShard(nil, p.tag, p.shard)
	case tagDeadLetter:
		return deadLetterKey(p.id)
	case tagShardMeta:
		return shardMetaKey(p.shard)
	case tagClient:
		return clientKey(p.a)
	case tagReplace:
		return binary.BigEndian.AppendUint64(namedKey(tagReplace, p.shard, p.a, p.b), p.id)
	case tagSession:
		return sessionKey([]byte(p.a))
	}
	return nil
}

// Decoding. Decoders accept only the canonical encoding (exact length,
// minimal varints, shard matching the id), so decode then encode gives
// back the same bytes.

// decodeKey parses any tagged key.
func decodeKey(k []byte) (keyParts, error) {
	if len(k) == 0 {
		return keyParts{}, errBadKey
	}
	p := keyParts{tag: k[0]}
	r := keyReader{buf: k[1:]}
	if p.tag != tagClient && p.tag != tagSession {
		p.shard = r.uint16()
	}
	switch p.tag {
	case tagTask, tagDeadLetter:
		p.id = r.id(p.shard)
	case tagDue:
		p.due = int64(r.uint64() ^ 1<<63)
		p.id = r.id(p.shard)
	case tagClientIndex, tagDeadClient:
		p.a = r.string()
		p.id = r.id(p.shard)
	case tagGroup, tagBlocked, tagIdempotency:
		p.a = r.string()
		p.b = r.string()
	case tagOrder:
		p.a = r.string()
		p.b = r.string()
		p.due = int64(r.uint64() ^ 1<<63)
		p.seq = r.uint64()
		p.id = r.id(p.shard)
	case tagIdemExpiry:
		p.due = int64(r.uint64() ^ 1<<63)
		p.a = r.string()
		p.b = r.string()
	case tagRaftEntry:
		p.seq = r.uint64() // the entry's index
	case tagShardMeta, tagRaftHardState, tagRaftTruncated:
	case tagClient, tagSession:
		p.a = r.string()
	case tagReplace:
		p.a = r.string()
		p.b = r.string()
		p.id = r.id(p.shard)
	default:
		return keyParts{}, fmt.Errorf("%w: unknown key space %q", errBadKey, p.tag)
	}
	if err := r.done(); err != nil {
		return keyParts{}, err
	}
	return p, nil
}

// decodeDueKey is the fast path for due index scans.
func decodeDueKey(k []byte) (due int64, id uint64, err error) {
	if len(k) != 19 || k[0] != tagDue {
		return 0, 0, errBadKey
	}
	due = int64(binary.BigEndian.Uint64(k[3:]) ^ 1<<63)
	id = binary.BigEndian.Uint64(k[11:])
	if ShardOf(id) != binary.BigEndian.Uint16(k[1:]) {
		return 0, 0, errBadKey
	}
	return due, id, nil
}

// keyReader consumes a key left to right and remembers the first error.
type keyReader struct {
	buf []byte
	err error
}

func (r *keyReader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.buf) {
		r.err = errBadKey
		return nil
	}
	b := r.buf[:n]
	r.buf = r.buf[n:]
	return b
}

func (r *keyReader) uint16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *keyReader) uint64() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// id reads a task id and checks that it belongs to shard.
func (r *keyReader) id(shard uint16) uint64 {
	id := r.uint64()
	if r.err == nil && ShardOf(id) != shard {
		r.err = fmt.Errorf("%w: id %#x is not in shard %d", errBadKey, id, shard)
	}
	return id
}

func (r *keyReader) string() string {
	if r.err != nil {
		return ""
	}
	n, size := binary.Uvarint(r.buf)
	if size <= 0 || size != uvarintLen(n) || n > uint64(len(r.buf)-size) {
		r.err = errBadKey
		return ""
	}
	r.buf = r.buf[size:]
	return string(r.take(int(n)))
}

func (r *keyReader) done() error {
	if r.err == nil && len(r.buf) != 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", errBadKey, len(r.buf))
	}
	return r.err
}

func uvarintLen(v uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], v)
}
