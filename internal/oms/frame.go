package oms

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
)

// readFrame reads the next varint-length-delimited frame, the format of
// protodelim. The returned body aliases br's buffer: it is valid until the
// caller discards len(body) bytes from br. br's buffer must hold at least
// max bytes.
//
// It returns io.EOF only at a frame boundary. A length over max returns
// ErrFrameTooLarge, a stream that ends inside a frame ErrTruncated, and a
// length prefix that is not a varint ErrBadLength. Read errors (deadlines,
// closed sockets) are returned as they are.
func readFrame(br *bufio.Reader, max int) ([]byte, error) {
	size, err := readLength(br)
	if err != nil {
		return nil, err
	}
	if size > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, size, max)
	}
	body, err := br.Peek(int(size))
	if errors.Is(err, io.EOF) {
		return nil, ErrTruncated
	}
	return body, err
}

// readLength reads a frame's varint length prefix.
func readLength(br *bufio.Reader) (uint64, error) {
	var x uint64
	for i := range binary.MaxVarintLen64 {
		b, err := br.ReadByte()
		switch {
		case err == io.EOF && i > 0:
			return 0, ErrTruncated
		case err != nil:
			return 0, err
		case i == binary.MaxVarintLen64-1 && b > 1:
			return 0, ErrBadLength // more than 64 bits
		case b < 0x80:
			return x | uint64(b)<<(7*i), nil
		}
		x |= uint64(b&0x7f) << (7 * i)
	}
	return 0, ErrBadLength
}

// decodeOrder decodes a frame body into o, using m as scratch space. A
// body that does not decode still yields an order: its routing fields are
// recovered when they precede the damage, and o.undecodable says what went
// wrong, for stage 1 to reject.
func decodeOrder(body []byte, m *omsv1.Order, o *order) {
	if err := proto.Unmarshal(body, m); err != nil {
		o.correlationID, o.seq, o.clientOrderID = salvageHeader(body)
		o.undecodable = "undecodable order: " + err.Error()
		return
	}
	o.fill(m)
}

// salvageHeader scans a damaged body for the correlation id, seq and
// client order id (fields 1-3, which well-behaved encoders write first),
// stopping at the first field it cannot parse.
func salvageHeader(b []byte) (correlationID int64, seq, clientOrderID uint64) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if typ == protowire.VarintType && num <= 3 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return
			}
			b = b[n:]
			switch num {
			case 1:
				correlationID = int64(v)
			case 2:
				seq = v
			case 3:
				clientOrderID = v
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return
		}
		b = b[n:]
	}
	return
}
