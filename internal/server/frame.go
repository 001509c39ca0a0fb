package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// Frames are the protodelim format: a message's length as a varint, then
// the message.

// frameSize reads a frame's length prefix. A length over max, a prefix
// that is not a varint and a stream that ends inside it are errors
// wrapping ErrFrame; io.EOF comes only at a frame boundary.
func frameSize(br *bufio.Reader, max int) (int, error) {
	size, err := readLength(br)
	if err != nil {
		return 0, err
	}
	if size > uint64(max) {
		return 0, fmt.Errorf("%w: frame of %d bytes exceeds the limit of %d", ErrFrame, size, max)
	}
	return int(size), nil
}

// readBody reads a frame's body of size bytes into buf (grown if
// needed) and returns it. A stream that ends inside the body is an error
// wrapping ErrFrame; read errors (deadlines, closed sockets) are returned
// as they are.
func readBody(br *bufio.Reader, size int, buf []byte) ([]byte, error) {
	if cap(buf) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(br, buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: stream ended inside a frame", ErrFrame)
		}
		return nil, err
	}
	return buf, nil
}

// readLength reads a frame's varint length prefix.
func readLength(br *bufio.Reader) (uint64, error) {
	var x uint64
	for i := range binary.MaxVarintLen64 {
		b, err := br.ReadByte()
		switch {
		case err == io.EOF && i > 0:
			return 0, fmt.Errorf("%w: stream ended inside a length prefix", ErrFrame)
		case err != nil:
			return 0, err
		case i == binary.MaxVarintLen64-1 && b > 1:
			return 0, fmt.Errorf("%w: length prefix overflows 64 bits", ErrFrame)
		case b < 0x80:
			return x | uint64(b)<<(7*i), nil
		}
		x |= uint64(b&0x7f) << (7 * i)
	}
	return 0, fmt.Errorf("%w: length prefix overflows 64 bits", ErrFrame)
}

// decodeRequest decodes a frame body. A body that does not decode is a
// broken frame, unless its top level still parses and carries a request
// id: then only that request fails (badID is set), and the connection
// goes on. Request id 0 is reserved for connection errors, so a request
// carrying it is a broken frame too.
func decodeRequest(body []byte, req *boomerangv1.Request) (badID uint64, err error) {
	if uerr := proto.Unmarshal(body, req); uerr != nil {
		if id := salvageRequestID(body); id != 0 {
			return id, invalid("body", "does not decode: %v", uerr)
		}
		return 0, fmt.Errorf("%w: request does not decode: %v", ErrFrame, uerr)
	}
	if req.RequestId == 0 {
		return 0, fmt.Errorf("%w: request_id 0 is reserved for connection errors", ErrFrame)
	}
	return 0, nil
}

// salvageRequestID returns the request id of a body whose top-level
// fields all parse (a nested message may still be damaged), or 0.
func salvageRequestID(b []byte) uint64 {
	var id uint64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0
			}
			id, b = v, b[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return 0
		}
		b = b[n:]
	}
	return id
}
