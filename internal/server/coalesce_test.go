package server

import (
	"bytes"
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// Registrations pipelined in one write are read together and registered
// as one batch; each still gets the answer it would get alone: its own
// task, its own validation error, idempotency keys repeated inside the
// batch answered with the first task, a forged session refused alone.
func TestTCPRegistrationsReadTogether(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	c := dialTCP(t, ts.TCPAddr())
	c.login("alice", "alice-password")

	const n = 200
	var buf bytes.Buffer
	for i := range n {
		r := &boomerangv1.RegisterTaskRequest{Payload: fmt.Appendf(nil, "task %d", i), When: &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: 3_600_000}}
		switch {
		case i%10 == 3:
			r.When = &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: -1}
		case i%10 == 5:
			r.Group = fmt.Sprintf("g%d", i%3)
		case i%50 == 7:
			r.IdempotencyKey = "same-key"
		}
		req := registerReq(r)
		req.RequestId, req.SessionId = uint64(i+1), c.session
		if i == 150 {
			req.SessionId = "forged"
		}
		if _, err := protodelim.MarshalTo(&buf, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.nc.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	ids := map[uint64]bool{}
	payloads := map[uint64][]byte{}
	sameKey := uint64(0)
	for range n {
		resp := c.recv()
		i := int(resp.RequestId) - 1
		switch {
		case i < 0 || i >= n:
			t.Fatalf("response to request %d, never sent", resp.RequestId)
		case i == 150:
			if resp.Error.GetStatus() != boomerangv1.Status_STATUS_UNAUTHORIZED {
				t.Fatalf("forged session: %v", resp)
			}
		case i%10 == 3:
			if resp.Error.GetStatus() != boomerangv1.Status_STATUS_INVALID_REQUEST || resp.Error.Field != "delay_ms" {
				t.Fatalf("request %d, negative delay: %v", i, resp)
			}
		default:
			task := okResponse(t, resp).GetRegisterTask().GetTask()
			if string(task.GetPayload()) != fmt.Sprintf("task %d", i) && i%50 != 7 {
				t.Fatalf("request %d answered with task %v", i, task)
			}
			if i%50 == 7 {
				if sameKey == 0 {
					sameKey = task.Id
				} else if task.Id != sameKey {
					t.Fatalf("idempotency key repeated in one read: tasks %d and %d", sameKey, task.Id)
				}
				continue
			}
			if ids[task.Id] {
				t.Fatalf("task id %d given twice", task.Id)
			}
			ids[task.Id] = true
			payloads[task.Id] = task.GetPayload()
		}
	}
	for id, payload := range payloads {
		if got := okResponse(t, c.call(getReq(id))).GetGetTask().GetTask(); !bytes.Equal(got.GetPayload(), payload) {
			t.Fatalf("task %d reads back as %v", id, got)
		}
	}
}
