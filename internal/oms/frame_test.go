package oms

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
)

func frameReader(b []byte, max int) *bufio.Reader {
	return bufio.NewReaderSize(bytes.NewReader(b), max+16)
}

func TestReadFrame(t *testing.T) {
	t.Parallel()
	good, _ := protodelimBytes(valid(3, 4))
	tests := []struct {
		name    string
		in      []byte
		bodies  int // frames read before err
		wantErr error
	}{
		{"empty stream", nil, 0, io.EOF},
		{"one frame", good, 1, io.EOF},
		{"two frames", append(append([]byte{}, good...), good...), 2, io.EOF},
		{"empty frame", []byte{0}, 1, io.EOF},
		{"frame at the limit", append([]byte{64}, make([]byte, 64)...), 1, io.EOF},
		{"frame over the limit", append([]byte{65}, make([]byte, 65)...), 0, ErrFrameTooLarge},
		{"huge length", protowire.AppendVarint(nil, 1<<62), 0, ErrFrameTooLarge},
		{"eleven-byte varint", bytes.Repeat([]byte{0x80}, 11), 0, ErrBadLength},
		{"ten-byte varint over 64 bits", append(bytes.Repeat([]byte{0xff}, 9), 0x02), 0, ErrBadLength},
		{"cut in the length", append(append([]byte{}, good...), 0x80), 1, ErrTruncated},
		{"cut in the body", append(append([]byte{}, good...), good[:len(good)-1]...), 1, ErrTruncated},
	}
	for _, tt := range tests {
		br := frameReader(tt.in, 64)
		n := 0
		var err error
		for {
			var body []byte
			if body, err = readFrame(br, 64); err != nil {
				break
			}
			br.Discard(len(body))
			n++
		}
		if n != tt.bodies || !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: %d frames then %v; want %d then %v", tt.name, n, err, tt.bodies, tt.wantErr)
		}
	}
}

func TestDecodeOrder(t *testing.T) {
	t.Parallel()
	want := valid(12, 34)
	body, _ := proto.Marshal(want)
	var m omsv1.Order
	var o order
	decodeOrder(body, &m, &o)
	if o.undecodable != "" || o.correlationID != 12 || o.seq != 34 || o.clientOrderID != want.ClientOrderId ||
		o.symbol != "ACME" || o.side != omsv1.Side_SIDE_BUY || o.quantity != 10 || o.price != 10_000 || o.clientTs != 42 {
		t.Fatalf("decoded %+v from %v", o, want)
	}

	// A bad UTF-8 symbol is undecodable in proto3; the header survives.
	bad := valid(-8, 2)
	bad.Symbol = "\xff"
	if _, err := proto.Marshal(bad); err == nil {
		t.Fatal("proto accepted invalid UTF-8; pick another corruption")
	}
	body = protowire.AppendTag(nil, 1, protowire.VarintType)
	body = protowire.AppendVarint(body, uint64(bad.CorrelationId))
	body = protowire.AppendTag(body, 3, protowire.VarintType)
	body = protowire.AppendVarint(body, 99)
	body = protowire.AppendTag(body, 4, protowire.BytesType)
	body = protowire.AppendBytes(body, []byte("\xff"))
	o = order{}
	decodeOrder(body, &m, &o)
	if o.undecodable == "" || o.correlationID != -8 || o.clientOrderID != 99 || o.seq != 0 {
		t.Fatalf("salvaged %+v, want undecodable with correlation -8 and id 99", o)
	}
}

// The server's frame reader reads what protodelim writes, and decodes
// every order as proto would.
func FuzzReadFrames(f *testing.F) {
	good, _ := protodelimBytes(valid(3, 4))
	f.Add(good)
	f.Add(append(append([]byte{}, good...), 0x80))
	f.Add([]byte{0})
	f.Add([]byte{3, 0xff, 0xff, 0xff})
	f.Add(bytes.Repeat([]byte{0xff}, 12))
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 256
		rd := bytes.NewReader(in)
		br := bufio.NewReaderSize(rd, max+16)
		ref := bufio.NewReader(bytes.NewReader(in))
		var m omsv1.Order
		for {
			pos := len(in) - rd.Len() - br.Buffered()
			body, err := readFrame(br, max)
			if err != nil {
				// io.EOF exactly when the input ends on a frame boundary.
				if errors.Is(err, io.EOF) != (pos == len(in)) {
					t.Fatalf("at byte %d of %d: %v", pos, len(in), err)
				}
				return
			}
			var o order
			decodeOrder(body, &m, &o)
			var want omsv1.Order
			refErr := protodelim.UnmarshalOptions{MaxSize: max}.UnmarshalFrom(ref, &want)
			if (refErr == nil) != (o.undecodable == "") {
				t.Fatalf("protodelim says %v, decoder says %q", refErr, o.undecodable)
			}
			if refErr == nil && (o.correlationID != want.CorrelationId || o.seq != want.SeqInFamily ||
				o.clientOrderID != want.ClientOrderId || o.symbol != want.Symbol || o.quantity != want.Quantity ||
				o.price != want.Price || o.side != want.Side || o.clientTs != want.ClientTsNs) {
				t.Fatalf("decoded %+v, protodelim %v", o, &want)
			}
			if _, err := br.Discard(len(body)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// Whatever the body, decoding yields an order that stage 1 either passes
// or rejects BAD_MSG, and salvage agrees with a full decode's header.
func FuzzDecodeOrder(f *testing.F) {
	good, _ := proto.Marshal(valid(3, 4))
	f.Add(good)
	f.Add(append(append([]byte{}, good...), 0x27))
	f.Add([]byte{0x08, 0x80})
	f.Fuzz(func(t *testing.T, body []byte) {
		var m omsv1.Order
		var o order
		decodeOrder(body, &m, &o)
		reason, _ := validate(&o)
		if o.undecodable != "" {
			if reason != omsv1.Reason_REASON_BAD_MSG {
				t.Fatalf("undecodable order passed validation: %+v", o)
			}
			return
		}
		corr, seq, id := salvageHeader(body)
		if corr != o.correlationID || seq != o.seq || id != o.clientOrderID {
			t.Fatalf("salvage %d/%d/%d, decode %d/%d/%d", corr, seq, id, o.correlationID, o.seq, o.clientOrderID)
		}
		if reason != omsv1.Reason_REASON_UNSPECIFIED && reason != omsv1.Reason_REASON_BAD_MSG {
			t.Fatalf("validation gave %v", reason)
		}
	})
}
