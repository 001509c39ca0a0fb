package delivery

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

func TestReadFrame(t *testing.T) {
	var buf bytes.Buffer
	for _, a := range []*boomerangv1.Ack{{DeliveryId: 1, Ok: true}, {DeliveryId: 2, Error: "x"}} {
		if _, err := protodelim.MarshalTo(&buf, a); err != nil {
			t.Fatal(err)
		}
	}
	br := bufio.NewReader(&buf)
	for _, want := range []uint64{1, 2} {
		body, err := readFrame(br, MaxAckFrame)
		if err != nil {
			t.Fatal(err)
		}
		var a boomerangv1.Ack
		if err := proto.Unmarshal(body, &a); err != nil || a.DeliveryId != want {
			t.Fatalf("ack %v, %v; want id %d", &a, err, want)
		}
		_, _ = br.Discard(len(body))
	}
	if _, err := readFrame(br, MaxAckFrame); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v, want EOF", err)
	}
	for _, tc := range []struct {
		in   []byte
		want error
	}{
		{[]byte{0x80}, errBadLength},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, errBadLength},
		{[]byte{0x80, 0x80, 0x10}, errFrameTooLarge},
		{[]byte{5, 1, 2}, io.ErrUnexpectedEOF},
	} {
		if _, err := readFrame(bufio.NewReader(bytes.NewReader(tc.in)), MaxAckFrame); !errors.Is(err, tc.want) {
			t.Errorf("readFrame(%x) = %v, want %v", tc.in, err, tc.want)
		}
	}
}

func FuzzReadFrame(f *testing.F) {
	var buf bytes.Buffer
	_, _ = protodelim.MarshalTo(&buf, &boomerangv1.Ack{DeliveryId: 7, Ok: true, Error: "e"})
	f.Add(buf.Bytes())
	f.Add([]byte{0x80, 0x80, 0x10})
	f.Add([]byte{3, 8, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), 256)
		for range 100 {
			body, err := readFrame(br, 256)
			if err != nil {
				return
			}
			if len(body) > 256 {
				t.Fatalf("a %d-byte frame passed the 256-byte limit", len(body))
			}
			var a boomerangv1.Ack
			_ = proto.Unmarshal(body, &a)
			if n, err := br.Discard(len(body)); n != len(body) || err != nil {
				t.Fatalf("discarding a %d-byte frame: %d, %v", len(body), n, err)
			}
		}
	})
}
