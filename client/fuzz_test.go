package client

import (
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// FuzzResponses feeds arbitrary bytes to a connection's reader as the
// server's stream, with three calls waiting. Whatever arrives, the reader
// must not panic, and every call must end exactly once: with a response
// carrying its own id, or with ErrConnectionLost when the stream ends.
func FuzzResponses(f *testing.F) {
	var seed []byte
	for _, r := range []*boomerangv1.Response{
		{RequestId: 2, Body: &boomerangv1.Response_GetTask{GetTask: &boomerangv1.GetTaskResponse{Task: &boomerangv1.Task{Id: 9}}}},
		{RequestId: 0, Error: &boomerangv1.Error{Status: boomerangv1.Status_STATUS_INVALID_REQUEST, Message: "broken frame"}},
		{RequestId: 1, Error: &boomerangv1.Error{Status: boomerangv1.Status_STATUS_NOT_FOUND}},
		{RequestId: 77},
	} {
		seed, _ = protodelim.MarshalOptions{}.MarshalAppend(seed, r)
		f.Add(seed)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0x05, 0x08})
	f.Fuzz(func(t *testing.T, stream []byte) {
		client, server := net.Pipe()
		lost := make(chan struct{})
		cn := newConn(client, 1<<16, func(*conn, error, int) { close(lost) })
		calls := make([]*call, 3)
		for i := range calls {
			calls[i] = &call{id: uint64(i + 1), result: make(chan result, 2)}
			if err := cn.send(calls[i], nil); err != nil {
				t.Fatal(err)
			}
		}
		go func() {
			_, _ = server.Write(stream)
			server.Close()
		}()
		select {
		case <-lost:
		case <-time.After(10 * time.Second):
			t.Fatal("the reader did not end with the stream")
		}
		cn.close(ErrClosed)
		for _, cl := range calls {
			select {
			case r := <-cl.result:
				if r.err == nil && r.resp.GetRequestId() != cl.id {
					t.Fatalf("call %d got the response to %d", cl.id, r.resp.GetRequestId())
				}
			default:
				t.Fatalf("call %d never ended", cl.id)
			}
			if len(cl.result) != 0 {
				t.Fatalf("call %d ended twice", cl.id)
			}
		}
	})
}
