// Package conformance holds the tests that write and check the shared
// wire vectors in testdata/conformance: raw TCP frames, a Request and a
// Response envelope for every operation of boomerang.v1, Delivery and Ack
// callback frames, and webhook signatures with all their inputs. The SDKs
// in other languages check themselves against the same files, so every
// implementation stays byte-compatible with the Go code.
//
// The vectors are built by the Go code that owns each format (protobuf
// encoding as the server and client do it, the server's error table, the
// webhook signer and verifier). After a deliberate change to a format,
// rewrite them with
//
//	go test ./internal/conformance -update
//
// and review the diff: every other SDK must then follow. Without -update
// the test fails when a checked-in vector no longer matches the Go code.
// testdata/conformance/README.md documents the file format.
package conformance
