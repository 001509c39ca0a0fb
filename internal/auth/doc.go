// Package auth keeps Boomerang's registered clients, checks their
// passwords and issues the sessions every other request carries.
//
// # Clients
//
// A client is an id ([A-Za-z0-9._-]{1,128}), a password, a role, its
// defaults for tasks (callback, retry policy, dispatch mode), its dead
// letter policy, its own callback rules (package egress) and the secrets
// its webhooks are signed with. Clients live in the store and, for fast
// logins, in memory; every change goes through the system group (see
// Replication below). A signing secret is returned once, when it is set
// (RegisterClient, RotateSigningSecret); nothing returns it again, nor
// the password hash.
//
// Roles: RoleClient sees and changes its own tasks, dead letters and
// groups; RoleAdmin everything, and manages clients; RoleReadOnly sees
// what an admin sees and changes nothing. Changing a client's role ends
// its sessions, which carry the role they were issued with.
//
// Bootstrap creates the first admin on an empty client table, with a
// given password or a generated one that the caller shows once. With
// clients already registered it changes nothing; CheckPassword tells the
// caller whether a configured password is the admin's.
//
// DeregisterClient refuses the last admin (ErrLastAdmin; so does
// demoting it) and a client that still has tasks (*HasTasksError, naming
// how many): cancel them first. The check and a registration by the same
// client racing with it are not ordered; a task registered in that window
// outlives its client and is dead-lettered when its delivery finds no
// client.
//
// # Signing secrets at rest
//
// The store's client record has an admin flag and one signing secret
// field. Auth keeps its own authpb.Extension in that field: the role, the
// callback rules, and the signing secrets sealed with AES-256-GCM under
// the first of Config.SecretKeys, bound to the client id. A record whose
// secrets are in the clear (written before sealing) or sealed with
// another configured key is sealed again with the first by Reseal, which
// the server calls at start; a record sealed with a key not configured
// fails New with ErrNoKey. So a key is rotated by putting the new key
// first and the old one after it for one start, then dropping the old
// one. Every node of a cluster must be given the same keys.
//
// RotateSigningSecret replaces a client's secret; the old one keeps
// signing beside it for an overlap (DefaultSecretOverlap unless told),
// so receivers can switch at any time within it. At most two secrets
// sign at once.
//
// # Passwords
//
// Passwords are stored only as argon2id hashes with a random 16-byte
// salt, encoded with their parameters in the PHC string format, so the
// cost can be raised later without invalidating existing hashes. Keys are
// compared in constant time. At most Config.MaxConcurrentHashes hashes run
// at once, bounding the memory the KDF takes under a burst of logins.
//
// # Logins: throttling and budget
//
// Login takes the source address of the attempt. In order:
//
//  1. A malformed id, or a password longer than MaxPasswordLen, is
//     refused at once: no such client can exist.
//  2. Attempts for one client id from one source (an IPv4 address, or
//     an IPv6 /64) run one at a time, each waiting for the one before.
//     After a failed one, further attempts for that id from that source
//     are refused at once with a *ThrottledError until a backoff has
//     passed: Config.LoginBackoff doubling with each consecutive failure
//     up to Config.MaxLoginBackoff; a success, or a quiet period of twice
//     the maximum, resets it. Failures from other sources do not count,
//     so guessing a client's password cannot lock the client out.
//  3. Each source may make Config.LoginsPerSource attempts per second,
//     with bursts of five seconds' worth; and password checks as a whole
//     may keep Config.LoginCPU of the hashing cores busy. Beyond either,
//     ErrLoginBusy, without hashing.
//  4. A known client's password is verified (the KDF). An unknown
//     client's is not: the attempt waits, holding a hashing slot, for as
//     long as verifications take on average, so it costs no CPU yet takes
//     the same time and the same budget as a wrong password.
//
// # Sessions
//
// A login issues a session: a random 256-bit id valid for
// Config.SessionTTL. Refresh issues a new id with a new expiry and ends
// the old one; Logout ends one at once. Sessions are replicated like
// clients: they survive a restart and are valid on every node. An expired (or
// refreshed-away) session is remembered for Config.ExpiredRetention so it
// is answered with ErrSessionExpired rather than ErrUnknownSession. Each
// client keeps at most Config.MaxSessionsPerClient sessions; a login
// beyond that ends its oldest. ListSessions shows live sessions by a
// handle, a hash of the id, never the id; RevokeSessions ends one by its
// handle or all of a client's. Deregistering a client, changing its role
// and changing its password end its sessions (a password change keeps
// the session that made it).
//
// # Replication
//
// Clients and sessions are the state of the system group, a Raft group
// (store.SystemShard) that the node's replica.Node hosts beside the task
// shards, with an Auth as its replica.StateMachine; a standalone node
// runs it with one voter. Every change, a login's session included, is a
// command record (authpb.SystemCommand) that the node taking the request
// decides in full (password hash and salt, sealed secrets and nonce,
// session key, time) and proposes; a follower's proposal is forwarded to
// the leader. Applying a record is a pure function of the state and the
// record: it reads no clock and no random source, checks the record's
// conditions (the client must or must not exist, an admin must remain,
// a replaced session must be live) and writes the state with the
// group's applied index in one unsynced batch, on the node's loop. The
// request is answered once its record is applied on the node that took
// it (Config.WriteTimeout bounds the wait: ErrNoLeader).
//
// Reads are local: Authenticate, Login's password check and every
// listing use this node's applied state, so a change is seen on a node
// once the node has applied it. A session revoked on one node is refused
// on another from the moment that node applies the revocation.
package auth
