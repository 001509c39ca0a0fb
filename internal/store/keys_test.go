package store

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestDueKeysSortByDueThenID(t *testing.T) {
	t.Parallel()
	type entry struct {
		due int64
		id  uint64
	}
	dues := []int64{math.MinInt64, -1 << 40, -2, -1, 0, 1, 2, 1 << 40, math.MaxInt64}
	var entries []entry
	for _, due := range dues {
		for _, n := range []uint64{1, 2, 300, MaxCounter} {
			entries = append(entries, entry{due, MakeID(9, n)})
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	rng.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	byKey := slices.Clone(entries)
	slices.SortFunc(byKey, func(a, b entry) int { return bytes.Compare(dueKey(a.due, a.id), dueKey(b.due, b.id)) })
	byValue := slices.Clone(entries)
	slices.SortFunc(byValue, func(a, b entry) int {
		if a.due != b.due {
			return cmpInt(a.due, b.due)
		}
		return cmpInt(a.id, b.id)
	})
	if !slices.Equal(byKey, byValue) {
		t.Fatalf("key order %v\nwant      %v", byKey, byValue)
	}
}

func cmpInt[T int64 | uint64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestKeyStringsDoNotCollide(t *testing.T) {
	t.Parallel()
	pairs := [][2][]byte{
		{groupKey(1, "a", "bc"), groupKey(1, "ab", "c")},
		{idempotencyKey(1, "a", "bc"), idempotencyKey(1, "ab", "c")},
		{groupKey(1, "", "a"), groupKey(1, "a", "")},
		{clientIndexKey(tagClientIndex, "a", MakeID(1, 0x61)), clientIndexKey(tagClientIndex, "a\x00", MakeID(1, 0x61))},
	}
	for _, p := range pairs {
		if bytes.Equal(p[0], p[1]) {
			t.Errorf("keys collide: %x", p[0])
		}
	}
	// One client's prefix never covers another client's entries.
	if bytes.HasPrefix(clientIndexKey(tagClientIndex, "ab", MakeID(1, 1)), clientPrefix(tagClientIndex, 1, "a")) {
		t.Error("client index prefix of \"a\" covers \"ab\"")
	}
}

func TestSchemaKeySortsFirst(t *testing.T) {
	t.Parallel()
	for _, k := range [][]byte{
		taskKey(1), dueKey(math.MinInt64, 1), clientIndexKey(tagClientIndex, "", 1), groupKey(0, "", ""),
		idempotencyKey(0, "", ""), deadLetterKey(1), clientIndexKey(tagDeadClient, "", 1), shardMetaKey(0), clientKey(""),
	} {
		if bytes.Compare(schemaKey, k) >= 0 {
			t.Errorf("schema key does not sort before %x", k)
		}
	}
}

func TestKeyRoundTrip(t *testing.T) {
	t.Parallel()
	id := MakeID(200, 12345)
	for _, p := range []keyParts{
		{tag: tagTask, shard: 200, id: id},
		{tag: tagDue, shard: 200, id: id, due: -5},
		{tag: tagClientIndex, shard: 200, id: id, a: "acme"},
		{tag: tagGroup, shard: 3, a: "acme", b: "orders"},
		{tag: tagIdempotency, shard: 3, a: "acme", b: "k"},
		{tag: tagIdemExpiry, shard: 3, due: 1_700_000_000_000, a: "acme", b: "k"},
		{tag: tagOrder, shard: 200, a: "acme", b: "orders", due: -5, seq: 9, id: id},
		{tag: tagDeadLetter, shard: 200, id: id},
		{tag: tagDeadClient, shard: 200, id: id, a: "acme"},
		{tag: tagShardMeta, shard: 255},
		{tag: tagClient, a: "acme"},
		{tag: tagReplace, shard: 200, a: "acme", b: "orders\x00debounced", id: id},
	} {
		got, err := decodeKey(p.encode())
		if err != nil || got != p {
			t.Errorf("decode(encode(%+v)) = %+v, %v", p, got, err)
		}
	}
}

func TestDecodeKeyRejects(t *testing.T) {
	t.Parallel()
	for name, k := range map[string][]byte{
		"empty":             nil,
		"unknown tag":       {'z', 0, 1},
		"short task":        taskKey(MakeID(1, 1))[:10],
		"trailing byte":     append(taskKey(MakeID(1, 1)), 0),
		"shard mismatch":    append([]byte{tagTask, 0, 2}, taskKey(MakeID(1, 1))[3:]...),
		"overlong varint":   {tagClient, 0x81, 0x00, 'a'},
		"string past end":   {tagClient, 5, 'a'},
		"varint overflow":   append([]byte{tagClient}, bytes.Repeat([]byte{0xff}, 11)...),
		"due shard":         append([]byte{tagDue, 0, 2}, dueKey(0, MakeID(1, 1))[3:]...),
		"meta trailing":     append(shardMetaKey(1), 0),
		"group missing":     groupKey(1, "a", "b")[:5],
		"client index tail": clientIndexKey(tagClientIndex, "a", MakeID(1, 1))[:8],
	} {
		if p, err := decodeKey(k); err == nil {
			t.Errorf("%s: decodeKey(%x) = %+v, want an error", name, k, p)
		}
	}
	if _, _, err := decodeDueKey(append([]byte{tagDue, 0, 2}, dueKey(0, MakeID(1, 1))[3:]...)); err == nil {
		t.Error("decodeDueKey accepted a key whose id is not in its shard")
	}
}

// FuzzDecodeKey: any bytes either fail to decode or are a canonical key
// that encodes back to the same bytes; decoding never panics.
func FuzzDecodeKey(f *testing.F) {
	for _, k := range [][]byte{
		taskKey(MakeID(1, 2)), dueKey(-7, MakeID(1, 2)), clientIndexKey(tagClientIndex, "c", MakeID(1, 2)),
		groupKey(4, "c", "g"), idempotencyKey(4, "c", "k"), deadLetterKey(MakeID(1, 2)),
		clientIndexKey(tagDeadClient, "c", MakeID(1, 2)), shardMetaKey(4), clientKey("c"), {tagClient, 0x81, 0x00},
	} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k []byte) {
		p, err := decodeKey(k)
		if err != nil {
			return
		}
		if enc := p.encode(); !bytes.Equal(enc, k) {
			t.Fatalf("decodeKey(%x) = %+v, which encodes to %x", k, p, enc)
		}
		if p.tag == tagDue {
			due, id, err := decodeDueKey(k)
			if err != nil || due != p.due || id != p.id {
				t.Fatalf("decodeDueKey(%x) = %d, %#x, %v; decodeKey says %d, %#x", k, due, id, err, p.due, p.id)
			}
		}
	})
}

// FuzzKeyRoundTrip: every key the store writes decodes to what it was
// made from, and keys of different values differ.
func FuzzKeyRoundTrip(f *testing.F) {
	f.Add(byte(tagTask), uint16(1), uint64(5), int64(0), "", "")
	f.Add(byte(tagDue), uint16(255), uint64(MaxCounter), int64(math.MinInt64), "", "")
	f.Add(byte(tagGroup), uint16(7), uint64(0), int64(0), "a", "bc")
	f.Add(byte(tagClient), uint16(0), uint64(0), int64(0), "\x00\xff", "")
	tags := []byte{tagTask, tagDue, tagClientIndex, tagGroup, tagIdempotency, tagDeadLetter, tagDeadClient, tagShardMeta, tagClient, tagOrder, tagIdemExpiry, tagReplace}
	f.Fuzz(func(t *testing.T, tag byte, shard uint16, n uint64, due int64, a, b string) {
		p := keyParts{tag: tags[int(tag)%len(tags)], shard: shard % DefaultShards}
		switch p.tag {
		case tagTask, tagDeadLetter:
			p.id = MakeID(p.shard, n&MaxCounter)
		case tagDue:
			p.id, p.due = MakeID(p.shard, n&MaxCounter), due
		case tagClientIndex, tagDeadClient:
			p.id, p.a = MakeID(p.shard, n&MaxCounter), a
		case tagGroup, tagIdempotency:
			p.a, p.b = a, b
		case tagOrder:
			p.a, p.b, p.due, p.seq, p.id = a, b, due, n, MakeID(p.shard, n&MaxCounter)
		case tagIdemExpiry:
			p.a, p.b, p.due = a, b, due
		case tagReplace:
			p.a, p.b, p.id = a, b, MakeID(p.shard, n&MaxCounter)
		case tagClient:
			p.shard, p.a = 0, a
		}
		k := p.encode()
		got, err := decodeKey(k)
		if err != nil || got != p {
			t.Fatalf("decodeKey(encode(%+v)) = %+v, %v", p, got, err)
		}
		// Changing any string changes the key.
		if p.a != "" || p.b != "" {
			q := p
			q.a, q.b = p.a+p.b[:min(1, len(p.b))], p.b[min(1, len(p.b)):]
			if q != p && bytes.Equal(q.encode(), k) {
				t.Fatalf("%+v and %+v share key %x", p, q, k)
			}
		}
	})
}
