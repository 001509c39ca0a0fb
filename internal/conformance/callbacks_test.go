package conformance

import (
	"bytes"
	"testing"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

func fullDelivery() *boomerangv1.Delivery {
	return &boomerangv1.Delivery{DeliveryId: maxID, TaskId: taskID, Attempt: 3, Client: "billing", Group: group,
		FireAtMs: dueMs, Payload: payload, SentMs: dueMs + 4321}
}

type callbacks struct {
	Format     int             `json:"format"`
	Comment    string          `json:"comment"`
	Deliveries []messageVector `json:"deliveries"`
	Acks       []messageVector `json:"acks"`
}

// callbacksFile holds what Boomerang sends to a TCP receiver (Delivery
// frames; a UDP datagram is the same message without the length) and
// what the receiver answers (Ack frames).
func callbacksFile(t *testing.T) callbacks {
	f := callbacks{Format: formatVersion, Comment: "Callback messages: boomerang.v1.Delivery (raw TCP frames; a UDP datagram is the hex without the length) and boomerang.v1.Ack (raw TCP frames). See README.md."}
	for _, d := range []struct {
		name string
		m    *boomerangv1.Delivery
	}{
		{"full", fullDelivery()},
		{"first_attempt_ungrouped", &boomerangv1.Delivery{DeliveryId: 1, TaskId: bigID, Attempt: 1, Client: "quick", FireAtMs: dueMs, Payload: []byte("hello, boomerang"), SentMs: dueMs + 2}},
		{"empty_payload", &boomerangv1.Delivery{DeliveryId: 2, TaskId: 3, Attempt: 1, Client: "c", Group: "g", FireAtMs: 1, SentMs: 1}},
	} {
		f.Deliveries = append(f.Deliveries, newMessageVector(t, d.name, d.m))
	}
	for _, a := range []struct {
		name string
		m    *boomerangv1.Ack
	}{
		{"ok", &boomerangv1.Ack{DeliveryId: maxID, Ok: true}},
		{"failed", &boomerangv1.Ack{DeliveryId: 1, Error: "database unavailable: retry later ✗"}},
		{"failed_no_reason", &boomerangv1.Ack{DeliveryId: 2}},
		{"empty", &boomerangv1.Ack{}},
	} {
		f.Acks = append(f.Acks, newMessageVector(t, a.name, a.m))
	}
	return f
}

type frames struct {
	Format  int            `json:"format"`
	Comment string         `json:"comment"`
	Streams []streamVector `json:"streams"`
	Broken  []brokenStream `json:"broken"`
}

// framesFile holds byte streams as a connection carries them: several
// frames in one read, lengths of one, two and three varint bytes, an
// empty frame, and streams a reader must refuse.
func framesFile(t *testing.T) frames {
	ops := operations()
	long := fullDelivery()
	long.Payload = bytes.Repeat([]byte{0xa5}, 200)
	longer := fullDelivery()
	longer.Payload = bytes.Repeat([]byte("0123456789abcdef"), 1024)
	f := frames{
		Format:  formatVersion,
		Comment: "Raw TCP byte streams: each is frames back to back (a varint length, then that many bytes of one message) and the messages they decode to, in order; then streams a frame reader must refuse. See README.md.",
		Streams: []streamVector{
			newStreamVector(t, "pipelined_requests", ops[8].req, ops[7].req, ops[9].req),
			newStreamVector(t, "responses_out_of_order", ops[9].resp, ops[8].resp, ops[7].resp, errorResponses()[3].resp),
			newStreamVector(t, "two_byte_length", long),
			newStreamVector(t, "three_byte_length", longer),
			newStreamVector(t, "acks_with_empty_frame", &boomerangv1.Ack{DeliveryId: 5, Ok: true}, &boomerangv1.Ack{}, &boomerangv1.Ack{DeliveryId: 4, Error: "no"}),
		},
		Broken: []brokenStream{
			{Name: "ends_inside_frame", Type: "boomerang.v1.Request", StreamHex: "0a0801", MaxBytes: 65536, Error: "truncated"},
			{Name: "ends_inside_length", Type: "boomerang.v1.Request", StreamHex: "80", MaxBytes: 65536, Error: "truncated"},
			{Name: "second_frame_cut_short", Type: "boomerang.v1.Ack", StreamHex: "020802" + "0408", MaxBytes: 65536, Error: "truncated"},
			{Name: "length_over_limit", Type: "boomerang.v1.Request", StreamHex: "f0a204", MaxBytes: 65536, Error: "too_large"},
			{Name: "length_over_64_bits", Type: "boomerang.v1.Request", StreamHex: "ffffffffffffffffffff01", MaxBytes: 65536, Error: "bad_length"},
		},
	}
	return f
}
