package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/api/boomerang/v1/boomerangv1connect"
)

func TestGRPCReceiverOverH2C(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle(NewGRPCReceiver(func(_ context.Context, d *boomerangv1.Delivery) error {
		if string(d.Payload) == "fail" {
			return errors.New("not now")
		}
		return nil
	}).Handler())
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: &protocols}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		_ = srv.Close()
		<-served
	}()
	tr := &http.Transport{Protocols: &protocols}
	defer tr.CloseIdleConnections()
	c := boomerangv1connect.NewCallbackServiceClient(&http.Client{Transport: tr}, "http://"+ln.Addr().String(), connect.WithGRPC())
	for _, tc := range []struct {
		payload string
		ok      bool
		text    string
	}{{"fine", true, ""}, {"fail", false, "not now"}} {
		resp, err := c.Deliver(context.Background(), connect.NewRequest(&boomerangv1.Delivery{DeliveryId: 11, Payload: []byte(tc.payload)}))
		if err != nil {
			t.Fatal(err)
		}
		if a := resp.Msg; a.DeliveryId != 11 || a.Ok != tc.ok || a.Error != tc.text {
			t.Fatalf("%s: ack %v", tc.payload, a)
		}
	}
}
