package conformance

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

var update = flag.Bool("update", false, "rewrite testdata/conformance from the Go code")

// dir is where the vectors live, shared by every SDK.
var dir = filepath.Join("..", "..", "testdata", "conformance")

// formatVersion changes only when the layout of the files changes, not
// when vectors are added.
const formatVersion = 1

// messageVector is one protobuf message: its fields as protojson, its
// binary encoding, and the same as a raw TCP frame (varint length, then
// the message).
type messageVector struct {
	Name     string          `json:"name"`
	Type     string          `json:"type"`
	JSON     json.RawMessage `json:"json"`
	Hex      string          `json:"hex"`
	FrameHex string          `json:"frame_hex"`
}

// streamVector is several frames back to back, as they arrive on a
// connection, and the messages they hold, in order.
type streamVector struct {
	Name      string            `json:"name"`
	Type      string            `json:"type"`
	StreamHex string            `json:"stream_hex"`
	Messages  []json.RawMessage `json:"messages"`
}

// brokenStream is a byte stream a frame reader must refuse. MaxBytes is
// the reader's frame limit; Error is "truncated" (the stream ends inside
// a length prefix or a frame), "too_large" (a length over MaxBytes) or
// "bad_length" (a length prefix longer than ten bytes or over 64 bits).
type brokenStream struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	StreamHex string `json:"stream_hex"`
	MaxBytes  int    `json:"max_bytes"`
	Error     string `json:"error"`
}

func newMessageVector(t *testing.T, name string, m proto.Message) messageVector {
	t.Helper()
	bin, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var frame bytes.Buffer
	if _, err := protodelim.MarshalTo(&frame, m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return messageVector{
		Name: name, Type: string(m.ProtoReflect().Descriptor().FullName()),
		JSON: protoJSON(t, m), Hex: hex.EncodeToString(bin), FrameHex: hex.EncodeToString(frame.Bytes()),
	}
}

func newStreamVector(t *testing.T, name string, msgs ...proto.Message) streamVector {
	t.Helper()
	var stream bytes.Buffer
	v := streamVector{Name: name, Type: string(msgs[0].ProtoReflect().Descriptor().FullName())}
	for _, m := range msgs {
		if _, err := protodelim.MarshalTo(&stream, m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v.Messages = append(v.Messages, protoJSON(t, m))
	}
	v.StreamHex = hex.EncodeToString(stream.Bytes())
	return v
}

// protoJSON is m in protojson, compacted: protojson varies its
// whitespace on purpose, and the files must not change from run to run.
func protoJSON(t *testing.T, m proto.Message) json.RawMessage {
	t.Helper()
	b, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestVectors regenerates every file and compares it with the checked-in
// one, or rewrites it with -update; then it reads the files back as
// another SDK would.
func TestVectors(t *testing.T) {
	files := map[string]any{
		"envelopes.json": envelopesFile(t),
		"callbacks.json": callbacksFile(t),
		"frames.json":    framesFile(t),
		"webhooks.json":  webhooksFile(t),
		"fences.json":    fencesFile(t),
		"shards.json":    shardsFile(t),
	}
	for name, content := range files {
		want, err := json.MarshalIndent(content, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		path := filepath.Join(dir, name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run: go test ./internal/conformance -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the Go code produces; if the change is deliberate, run: go test ./internal/conformance -update", path)
		}
	}
	t.Run("envelopes", checkEnvelopes)
	t.Run("callbacks", checkCallbacks)
	t.Run("frames", checkFrames)
	t.Run("webhooks", checkWebhooks)
	t.Run("fences", checkFences)
	t.Run("shards", checkShards)
}
