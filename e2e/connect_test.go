package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// postJSON calls a procedure with the Connect protocol's JSON form, as
// curl would, and returns the status and body.
func postJSON(t *testing.T, addr, procedure, session string, body []byte) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/boomerang.v1.BoomerangService/"+procedure, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set("Authorization", "Bearer "+session)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: waitLimit}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%s answered %d %q", procedure, resp.StatusCode, out)
	}
	return resp.StatusCode, m
}

// Over HTTP/JSON a payload of the documented limit fits, though base64
// makes the body a third larger; anything refused carries the
// boomerang.v1.Error detail.
func TestHTTPJSONPayloadLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	code, login := postJSON(t, s.http, "Login", "", []byte(`{"clientId":"admin","password":"`+adminPassword+`"}`))
	if code != http.StatusOK {
		t.Fatalf("Login: %d %v", code, login)
	}
	session := login["sessionId"].(string)
	register := func(payload int) (int, map[string]any) {
		body := `{"payload":"` + base64.StdEncoding.EncodeToString(make([]byte, payload)) + `","delayMs":"3600000"}`
		return postJSON(t, s.http, "RegisterTask", session, []byte(body))
	}
	if code, resp := register(1 << 20); code != http.StatusOK || resp["task"] == nil {
		t.Fatalf("a 1 MiB payload: %d %v", code, resp)
	}
	for _, size := range []int{1<<20 + 1, 2 << 20} {
		code, resp := register(size)
		if code != http.StatusBadRequest || !hasWireDetail(resp) {
			t.Fatalf("a %d-byte payload: %d %v", size, code, resp)
		}
	}
	code, resp := postJSON(t, s.http, "Login", "", []byte(`{"clientId":`))
	if code != http.StatusBadRequest || !hasWireDetail(resp) {
		t.Fatalf("a body that does not decode: %d %v", code, resp)
	}
}

func hasWireDetail(resp map[string]any) bool {
	details, _ := resp["details"].([]any)
	for _, d := range details {
		if m, ok := d.(map[string]any); ok && strings.HasSuffix(m["type"].(string), "boomerang.v1.Error") {
			return true
		}
	}
	return false
}
