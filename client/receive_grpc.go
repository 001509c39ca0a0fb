package client

import (
	"context"
	"net/http"

	"connectrpc.com/connect"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/api/boomerang/v1/boomerangv1connect"
)

// GRPCReceiver implements boomerang.v1.CallbackService, the service the
// server calls to deliver over gRPC. The server speaks gRPC over
// cleartext HTTP/2 (h2c), so serve it from an http.Server whose Protocols
// allow unencrypted HTTP/2:
//
//	mux := http.NewServeMux()
//	mux.Handle(client.NewGRPCReceiver(handle).Handler())
//	var protocols http.Protocols
//	protocols.SetHTTP1(true)
//	protocols.SetUnencryptedHTTP2(true)
//	srv := &http.Server{Handler: mux, Protocols: &protocols}
//
// A handler's nil acknowledges the delivery (Ack.ok true); an error
// answers Ack.ok false with its message, and the server retries.
type GRPCReceiver struct {
	handler Handler
}

var _ boomerangv1connect.CallbackServiceHandler = (*GRPCReceiver)(nil)

// NewGRPCReceiver returns a receiver that passes deliveries to h.
func NewGRPCReceiver(h Handler) *GRPCReceiver {
	return &GRPCReceiver{handler: h}
}

// Handler returns the path to mount the service on and its handler.
// Acks are not compressed unless opts say otherwise: they are a few bytes.
func (r *GRPCReceiver) Handler(opts ...connect.HandlerOption) (string, http.Handler) {
	opts = append([]connect.HandlerOption{connect.WithCompressMinBytes(1024)}, opts...)
	return boomerangv1connect.NewCallbackServiceHandler(r, opts...)
}

// Deliver implements boomerangv1connect.CallbackServiceHandler.
func (r *GRPCReceiver) Deliver(ctx context.Context, req *connect.Request[boomerangv1.Delivery]) (*connect.Response[boomerangv1.Ack], error) {
	ack := &boomerangv1.Ack{DeliveryId: req.Msg.GetDeliveryId(), Ok: true}
	if err := r.handler(ctx, req.Msg); err != nil {
		ack.Ok, ack.Error = false, err.Error()
	}
	return connect.NewResponse(ack), nil
}
