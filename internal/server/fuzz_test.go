package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/scheduler"
)

// FuzzReadFrames feeds arbitrary bytes to the frame reader and request
// decoder, as a connection's reader does. Every outcome must be a frame
// within the limit, the end of the stream, or a broken-frame error; a
// decoded request has a non-zero id; a salvaged one fails only itself,
// naming the body.
func FuzzReadFrames(f *testing.F) {
	var valid bytes.Buffer
	for _, req := range []*boomerangv1.Request{
		loginReq("admin", "pw"),
		{RequestId: 7, SessionId: "s", Body: &boomerangv1.Request_RegisterTask{RegisterTask: &boomerangv1.RegisterTaskRequest{Payload: []byte("p"), Group: "g"}}},
		{RequestId: 8},
	} {
		if req.RequestId == 0 {
			req.RequestId = 1
		}
		_, _ = protodelim.MarshalTo(&valid, req)
	}
	f.Add(valid.Bytes())
	f.Add([]byte{0x80})
	f.Add(bytes.Repeat([]byte{0xff}, 11))
	f.Add([]byte{5, 8, 1, 0x52, 2, 0xff})
	const limit = 256
	f.Fuzz(func(t *testing.T, stream []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(stream), 16)
		var scratch []byte
		for {
			size, err := frameSize(br, limit)
			if errors.Is(err, io.EOF) {
				return
			}
			var body []byte
			if err == nil {
				body, err = readBody(br, size, scratch)
			}
			if err != nil {
				if !errors.Is(err, ErrFrame) {
					t.Fatalf("reading a frame: %v is neither EOF nor a broken frame", err)
				}
				return
			}
			if len(body) > limit {
				t.Fatalf("frame of %d bytes passed the limit %d", len(body), limit)
			}
			req := new(boomerangv1.Request)
			badID, err := decodeRequest(body, req)
			switch {
			case err == nil && req.RequestId == 0:
				t.Fatal("a request with id 0 was accepted")
			case err == nil:
				again, merr := proto.Marshal(req)
				if merr != nil {
					t.Fatalf("decoded request does not encode: %v", merr)
				}
				var round boomerangv1.Request
				if uerr := proto.Unmarshal(again, &round); uerr != nil || !proto.Equal(&round, req) {
					t.Fatalf("decoded request does not round-trip: %v", uerr)
				}
			case badID != 0:
				if e := ErrorOf(err); e.Status != boomerangv1.Status_STATUS_INVALID_REQUEST || e.Field != "body" {
					t.Fatalf("salvaged request error %v", e)
				}
			case !errors.Is(err, ErrFrame):
				t.Fatalf("undecodable frame error %v is not a broken frame", err)
			default:
				return // the connection closes here
			}
			scratch = body
		}
	})
}

// FuzzRegisterTaskValidation builds registrations from fuzzed fields and
// checks that each is either stored as asked or refused as
// INVALID_REQUEST naming a field, never anything else.
func FuzzRegisterTaskValidation(f *testing.F) {
	ts := startServer(f, func(c *Config) { c.MaxPayloadBytes = 4 << 10 })
	ts.del.setOutcome(func(scheduler.Delivery) (error, bool) { return nil, true })
	ts.addClients(f)
	f.Add(uint16(5), uint8(0), int64(0), int64(0), "g", int32(0), int32(0), int64(0), int64(0), 0.0, 0.0, uint32(0), int32(0), "", int64(0), "")
	f.Add(uint16(5000), uint8(1), int64(-1), int64(-1), "a\x00", int32(9), int32(3), int64(-1), int64(5), math.NaN(), 2.0, uint32(1001), int32(4), "host:99999", int64(-1), "k")
	// Invalid UTF-8 once reached the store, whose records refuse it.
	f.Add(uint16(5), uint8(0), int64(0), int64(0), "\xff", int32(0), int32(0), int64(0), int64(0), 0.0, 0.0, uint32(0), int32(0), "", int64(0), "\xc8\xff")
	f.Add(uint16(10), uint8(2), int64(1), int64(60000), "grp", int32(2), int32(2), int64(100), int64(50), 1.5, 0.5, uint32(3), int32(1), "http://x/y", int64(5000), strings.Repeat("k", 300))
	f.Fuzz(func(t *testing.T, payloadLen uint16, whenKind uint8, when, interval int64, group string, mode, backoff int32,
		initial, maxInterval int64, multiplier, jitter float64, attempts uint32, protocol int32, endpoint string, timeout int64, key string) {
		req := &boomerangv1.RegisterTaskRequest{
			Payload: make([]byte, payloadLen), RepeatIntervalMs: interval, Group: group, Mode: boomerangv1.DispatchMode(mode),
			IdempotencyKey: key,
		}
		switch whenKind % 3 {
		case 1:
			req.When = &boomerangv1.RegisterTaskRequest_DelayMs{DelayMs: when}
		case 2:
			req.When = &boomerangv1.RegisterTaskRequest_FireAtMs{FireAtMs: when}
		}
		if backoff != 0 || initial != 0 || maxInterval != 0 || multiplier != 0 || jitter != 0 || attempts != 0 {
			req.Retry = &boomerangv1.RetryPolicy{Backoff: boomerangv1.Backoff(backoff), InitialIntervalMs: initial, MaxIntervalMs: maxInterval,
				Multiplier: multiplier, Jitter: jitter, MaxAttempts: attempts}
		}
		if protocol != 0 || endpoint != "" || timeout != 0 {
			req.Callback = &boomerangv1.Callback{Protocol: boomerangv1.Protocol(protocol), Endpoint: endpoint, TimeoutMs: timeout}
		}
		resp, err := ts.svc.RegisterTask(ctx, alice, req)
		if err != nil {
			if e := ErrorOf(err); e.Status != boomerangv1.Status_STATUS_INVALID_REQUEST || e.Field == "" {
				t.Fatalf("RegisterTask(%v) = %v: not a field error", req, e)
			}
			return
		}
		task := resp.Task
		if !resp.Created {
			return // an idempotency key matched a task not yet gone
		}
		if len(task.Payload) != int(payloadLen) || task.Group != group || task.RepeatIntervalMs != interval || task.Client != "alice" ||
			task.Mode == boomerangv1.DispatchMode_DISPATCH_MODE_UNSPECIFIED || (key == "") != (task.IdempotencyKey == "") {
			t.Fatalf("stored %v for %v", task, req)
		}
		if interval < 0 || len(group) > scheduler.MaxGroupLen || strings.ContainsRune(group, 0) || payloadLen > 4<<10 {
			t.Fatalf("accepted an invalid request %v", req)
		}
		// Tasks due now may be delivered (and gone) or under way already.
		if _, err := ts.svc.CancelTask(ctx, alice, &boomerangv1.CancelTaskRequest{Id: task.Id}); err != nil {
			if s := ErrorOf(err).Status; s != boomerangv1.Status_STATUS_CONFLICT && s != boomerangv1.Status_STATUS_NOT_FOUND {
				t.Fatalf("cancel: %v", err)
			}
		}
	})
}
