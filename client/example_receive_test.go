package client_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/api/boomerang/v1/boomerangv1connect"
	"github.com/boomerangd/boomerang/client"
)

// handle is the one handler every receiver below serves.
func handle(_ context.Context, d *boomerangv1.Delivery) error {
	fmt.Printf("task %d attempt %d group %q term %d: %s\n", d.TaskId, d.Attempt, d.Group, d.Term, d.Payload)
	return nil
}

// An HTTP receiver checks each webhook's signature with the client's
// signing secret before the handler sees it. Here a hand-made request
// stands in for the server.
func ExampleHTTPReceiver() {
	secret := []byte("whsec_example")
	r, err := client.NewHTTPReceiver(client.HTTPReceiverConfig{Secret: secret, Handler: handle})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(r) // or http.ListenAndServe(":8080", r)
	defer srv.Close()

	body := `{"invoice":42}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	h := map[string]string{
		client.HeaderDeliveryID: "7",
		client.HeaderTaskID:     "42",
		client.HeaderAttempt:    "1",
		client.HeaderFireAt:     "1767225600000",
		client.HeaderClient:     "billing",
		client.HeaderGroup:      "customer%207",
		client.HeaderTerm:       "3",
		client.HeaderTimestamp:  strconv.FormatInt(time.Now().Unix(), 10),
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	mac := hmac.New(sha256.New, secret)
	for _, k := range []string{client.HeaderTimestamp, client.HeaderTaskID, client.HeaderAttempt, client.HeaderFireAt, client.HeaderClient, client.HeaderGroup, client.HeaderTerm} {
		mac.Write([]byte(h[k] + "\n"))
	}
	mac.Write([]byte(body))
	req.Header.Set(client.HeaderSignature, "v1="+hex.EncodeToString(mac.Sum(nil)))

	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output:
	// task 42 attempt 1 group "customer 7" term 3: {"invoice":42}
	// 204 No Content
}

// A gRPC receiver is a Connect handler for boomerang.v1.CallbackService,
// served over cleartext HTTP/2.
func ExampleGRPCReceiver() {
	mux := http.NewServeMux()
	mux.Handle(client.NewGRPCReceiver(handle).Handler())
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: &protocols}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	// What the server does for each delivery:
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &h2c}
	defer tr.CloseIdleConnections()
	callbacks := boomerangv1connect.NewCallbackServiceClient(&http.Client{Transport: tr}, "http://"+ln.Addr().String(), connect.WithGRPC())
	ack, err := callbacks.Deliver(context.Background(), connect.NewRequest(&boomerangv1.Delivery{DeliveryId: 1, TaskId: 42, Attempt: 1, Term: 3, Payload: []byte("ping")}))
	if err != nil {
		panic(err)
	}
	fmt.Println("ok:", ack.Msg.Ok)
	// Output:
	// task 42 attempt 1 group "" term 3: ping
	// ok: true
}

// A TCP receiver reads Delivery frames and answers each with an Ack frame
// carrying its delivery id.
func ExampleTCPReceiver() {
	r, err := client.NewTCPReceiver(client.TCPReceiverConfig{Handler: handle})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go r.Serve(ln)
	defer r.Close(context.Background())

	// What the server does: write frames, read acks.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	_, _ = protodelim.MarshalTo(conn, &boomerangv1.Delivery{DeliveryId: 1, TaskId: 42, Attempt: 2, Group: "g", Term: 3, Payload: []byte("pong")})
	var ack boomerangv1.Ack
	if err := protodelim.UnmarshalFrom(bufio.NewReader(conn), &ack); err != nil {
		panic(err)
	}
	fmt.Println("ack for", ack.DeliveryId, "ok:", ack.Ok)
	// Output:
	// task 42 attempt 2 group "g" term 3: pong
	// ack for 1 ok: true
}

// A UDP receiver handles one Delivery per datagram. Nothing is
// acknowledged: UDP deliveries are at most once.
func ExampleUDPReceiver() {
	done := make(chan struct{})
	r, err := client.NewUDPReceiver(client.UDPReceiverConfig{Handler: func(ctx context.Context, d *boomerangv1.Delivery) error {
		defer close(done)
		return handle(ctx, d)
	}})
	if err != nil {
		panic(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go r.Serve(pc)
	defer r.Close(context.Background())

	// What the server does: one datagram per delivery.
	conn, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	b, _ := proto.Marshal(&boomerangv1.Delivery{DeliveryId: 1, TaskId: 42, Attempt: 1, Term: 3, Payload: []byte("tick")})
	_, _ = conn.Write(b)
	<-done
	// Output:
	// task 42 attempt 1 group "" term 3: tick
}

// VerifyWebhook checks a delivery received through another HTTP stack.
// This is the worked example of docs/callbacks.md.
func ExampleVerifyWebhook() {
	h := http.Header{}
	h.Set(client.HeaderDeliveryID, "7")
	h.Set(client.HeaderTaskID, "281474976710657")
	h.Set(client.HeaderAttempt, "1")
	h.Set(client.HeaderFireAt, "1767225600000")
	h.Set(client.HeaderClient, "billing")
	h.Set(client.HeaderGroup, "customer%207")
	h.Set(client.HeaderTerm, "3")
	h.Set(client.HeaderTimestamp, "1767225600")
	h.Set(client.HeaderSignature, "v1=09ad9daac28dddebc2ad97c99d34b55148ce0d1dc7504e69bfa4852810c7761a")
	body := []byte(`{"invoice":42}`)
	receivedAt := time.Unix(1767225630, 0)

	d, err := client.VerifyWebhook([]byte("whsec_example"), h, body, receivedAt, 0)
	fmt.Println(d.GetTaskId(), d.GetGroup(), d.GetTerm(), err)
	_, err = client.VerifyWebhook([]byte("another secret"), h, body, receivedAt, 0)
	fmt.Println(err)
	_, err = client.VerifyWebhook([]byte("whsec_example"), h, body, receivedAt.Add(10*time.Minute), 0)
	fmt.Println(err != nil)
	// Output:
	// 281474976710657 customer 7 3 <nil>
	// client: webhook signature does not match
	// true
}

// A Fence around the handler drops deliveries from a shard leader that
// was replaced: once group g has seen term 5, a delivery for g in term 4
// is acknowledged without reaching the handler. Other groups' terms are
// not compared.
func ExampleFence_Wrap() {
	fence := client.NewFence(0)
	h := fence.Wrap(handle) // the Handler of any receiver
	for _, d := range []*boomerangv1.Delivery{
		{TaskId: 1, Client: "billing", Group: "g", Term: 5, Payload: []byte("new leader")},
		{TaskId: 2, Client: "billing", Group: "g", Term: 4, Payload: []byte("replaced leader")},
		{TaskId: 3, Client: "billing", Group: "h", Term: 1, Payload: []byte("another group")},
	} {
		if err := h(context.Background(), d); err != nil {
			panic(err)
		}
	}
	fmt.Println("stale:", fence.Stale())
	// Output:
	// task 1 attempt 0 group "g" term 5: new leader
	// task 3 attempt 0 group "h" term 1: another group
	// stale: 1
}
