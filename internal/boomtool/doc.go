// Package boomtool is the command tree behind cmd/boomtool, the
// command-line client of Boomerang: tasks (set, update, delete, show,
// list, next), dead letters (dlq), groups, client administration, login
// sessions and their administration, server info, a load generator (bench, see internal/boomload)
// and shell completion. docs/cli.md describes every command.
//
// # Connecting
//
// Every command that talks to the server dials it through the client SDK,
// with credentials from --client/--password or BOOMERANG_CLIENT and
// BOOMERANG_PASSWORD when given, and otherwise with the session "login"
// saved in <user config dir>/boomerang/session.json (mode 0600). The
// address is --addr, else BOOMERANG_ADDR, else the saved session's, else
// 127.0.0.1:7070. A saved session is only used for the address it was
// made for, and an expired one is refused before dialling. TLS comes from
// --tls, --ca (or BOOMERANG_CA) and --cert/--key, else from the saved
// session, which keeps what login used.
//
// # Output and errors
//
// Tables and key/value lists for people, with control characters from
// the server escaped (see clean); with -o json the server's response
// message in the protobuf JSON mapping, the shape of the HTTP/JSON API.
// Errors are one line on standard error starting "boomtool: ", with the
// server's status and message and a hint where one helps. Main returns 0
// on success, 1 when the operation failed and 2 for a usage mistake (an
// unknown command or subcommand too: see parent).
//
// Main takes its whole environment (streams, variables, config directory,
// clock) as an Env, so tests run the tool in-process.
package boomtool
