package server

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/api/boomerang/v1/boomerangv1connect"
)

// connectClients are the same service over every protocol the HTTP port
// speaks: Connect (binary and JSON), gRPC over cleartext HTTP/2, and
// gRPC-Web.
func connectClients(t testing.TB, addr string) map[string]boomerangv1connect.BoomerangServiceClient {
	t.Helper()
	h1 := &http.Transport{}
	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(func() {
		h1.CloseIdleConnections()
		h2c.CloseIdleConnections()
	})
	base := "http://" + addr
	return map[string]boomerangv1connect.BoomerangServiceClient{
		"connect":      boomerangv1connect.NewBoomerangServiceClient(&http.Client{Transport: h1}, base),
		"connect-json": boomerangv1connect.NewBoomerangServiceClient(&http.Client{Transport: h1}, base, connect.WithProtoJSON()),
		"grpc":         boomerangv1connect.NewBoomerangServiceClient(&http.Client{Transport: h2c}, base, connect.WithGRPC()),
		"grpc-web":     boomerangv1connect.NewBoomerangServiceClient(&http.Client{Transport: h1}, base, connect.WithGRPCWeb()),
	}
}

func withSession[T any](msg *T, session string) *connect.Request[T] {
	req := connect.NewRequest(msg)
	if session != "" {
		req.Header().Set("Authorization", "Bearer "+session)
	}
	return req
}

// wireError extracts the boomerang Error detail of a Connect error.
func wireError(t *testing.T, err error) (connect.Code, *boomerangv1.Error) {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) {
		t.Fatalf("not a Connect error: %v", err)
	}
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil {
			if e, ok := v.(*boomerangv1.Error); ok {
				return ce.Code(), e
			}
		}
	}
	t.Fatalf("Connect error %v carries no boomerang.v1.Error detail", err)
	return 0, nil
}

func TestConnectProtocols(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	for name, c := range connectClients(t, ts.HTTPAddr()) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			login, err := c.Login(ctx, connect.NewRequest(&boomerangv1.LoginRequest{ClientId: "alice", Password: "alice-password"}))
			if err != nil {
				t.Fatal(err)
			}
			session := login.Msg.SessionId
			reg, err := c.RegisterTask(ctx, withSession(&boomerangv1.RegisterTaskRequest{Payload: []byte(name), When: delay(60_000), Group: name}, session))
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.GetTask(ctx, withSession(&boomerangv1.GetTaskRequest{Id: reg.Msg.Task.Id}, session))
			if err != nil || string(got.Msg.Task.Payload) != name || got.Msg.Task.Client != "alice" {
				t.Fatalf("GetTask: %v, %v", got, err)
			}

			_, err = c.GetTask(ctx, withSession(&boomerangv1.GetTaskRequest{}, session))
			if code, e := wireError(t, err); code != connect.CodeInvalidArgument || e.Status != boomerangv1.Status_STATUS_INVALID_REQUEST || e.Field != "id" {
				t.Fatalf("invalid request: %v %v", code, e)
			}
			_, err = c.GetTask(ctx, withSession(&boomerangv1.GetTaskRequest{Id: reg.Msg.Task.Id}, ""))
			if code, e := wireError(t, err); code != connect.CodeUnauthenticated || e.Status != boomerangv1.Status_STATUS_UNAUTHORIZED {
				t.Fatalf("no session: %v %v", code, e)
			}
			_, err = c.ListClients(ctx, withSession(&boomerangv1.ListClientsRequest{}, session))
			if code, e := wireError(t, err); code != connect.CodeUnauthenticated || e.Message != "only an admin may do this" {
				t.Fatalf("not admin: %v %v", code, e)
			}
			_, err = c.GetTask(ctx, withSession(&boomerangv1.GetTaskRequest{Id: reg.Msg.Task.Id + 1000}, session))
			if code, e := wireError(t, err); code != connect.CodeNotFound || e.Status != boomerangv1.Status_STATUS_NOT_FOUND {
				t.Fatalf("not found: %v %v", code, e)
			}
			refreshed, err := c.RefreshSession(ctx, withSession(&boomerangv1.RefreshSessionRequest{}, session))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.GetServerInfo(ctx, withSession(&boomerangv1.GetServerInfoRequest{}, session))
			if code, e := wireError(t, err); code != connect.CodeUnauthenticated || e.Status != boomerangv1.Status_STATUS_SESSION_EXPIRED {
				t.Fatalf("refreshed-away session: %v %v", code, e)
			}
			if _, err := c.GetServerInfo(ctx, withSession(&boomerangv1.GetServerInfoRequest{}, refreshed.Msg.SessionId)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConnectPlainJSON(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	body := `{"clientId":"admin","password":"` + adminPassword + `"}`
	resp, err := http.Post("http://"+ts.HTTPAddr()+boomerangv1connect.BoomerangServiceLoginProcedure, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `"sessionId"`) || !strings.Contains(string(out), `"admin":true`) {
		t.Fatalf("POST Login: %d %s", resp.StatusCode, out)
	}
	http.DefaultClient.CloseIdleConnections()
}

// A request over the body limit, whatever its protocol, is refused with
// the wire Error as a detail; a payload at the limit passes even in JSON,
// whose base64 makes it a third larger.
func TestConnectRequestSizes(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *Config) { c.MaxPayloadBytes, c.MaxFrameBytes = 8<<10, 16<<10 })
	ts.addClients(t)
	for name, c := range connectClients(t, ts.HTTPAddr()) {
		login, err := c.Login(ctx, connect.NewRequest(&boomerangv1.LoginRequest{ClientId: "alice", Password: "alice-password"}))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		session := login.Msg.SessionId
		_, err = c.RegisterTask(ctx, withSession(&boomerangv1.RegisterTaskRequest{Payload: make([]byte, 32<<10)}, session))
		if code, e := wireError(t, err); code != connect.CodeInvalidArgument || e.Status != boomerangv1.Status_STATUS_INVALID_REQUEST ||
			!strings.Contains(e.Message, "request too large") {
			t.Errorf("%s: oversized request: %v %v", name, code, e)
		}
		_, err = c.RegisterTask(ctx, withSession(&boomerangv1.RegisterTaskRequest{Payload: make([]byte, 8<<10+1)}, session))
		if code, e := wireError(t, err); code != connect.CodeInvalidArgument || e.Field != "payload" {
			t.Errorf("%s: payload over the limit: %v %v", name, code, e)
		}
		if _, err := c.RegisterTask(ctx, withSession(&boomerangv1.RegisterTaskRequest{Payload: make([]byte, 8<<10), When: delay(60_000)}, session)); err != nil {
			t.Errorf("%s: payload at the limit: %v", name, err)
		}
	}
}

// Errors connect raises before the service sees the request carry the
// wire Error too.
func TestConnectErrorsCarryDetail(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	url := "http://" + ts.HTTPAddr() + boomerangv1connect.BoomerangServiceLoginProcedure
	for name, body := range map[string]string{"malformed JSON": `{"clientId":`, "wrong type": `{"clientId":7}`} {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), `"type":"boomerang.v1.Error"`) {
			t.Errorf("%s: %d %s", name, resp.StatusCode, out)
		}
	}
	// gRPC: a message whose envelope does not decode.
	c := connectClients(t, ts.HTTPAddr())["grpc"]
	_, err := c.GetServerInfo(ctx, withSession(&boomerangv1.GetServerInfoRequest{}, "no-such-session"))
	if code, e := wireError(t, err); code != connect.CodeUnauthenticated || e.Status != boomerangv1.Status_STATUS_UNAUTHORIZED {
		t.Errorf("gRPC: %v %v", code, e)
	}
	// gRPC: an envelope that claims more than the limit, which connect
	// refuses before reading it.
	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	defer h2c.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("\x00\x7f\xff\xff\xffxyz"))
	req.Header.Set("Content-Type", "application/grpc")
	resp, err := (&http.Client{Transport: h2c}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	status := resp.Trailer.Get("Grpc-Status") + resp.Header.Get("Grpc-Status")
	if status == "0" || status == "" || resp.Trailer.Get("Grpc-Status-Details-Bin")+resp.Header.Get("Grpc-Status-Details-Bin") == "" {
		t.Errorf("gRPC oversized envelope: status %q, trailers %v, headers %v", status, resp.Trailer, resp.Header)
	}
	http.DefaultClient.CloseIdleConnections()
}
