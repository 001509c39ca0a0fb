// Package auth keeps Boomerang's registered clients, checks their
// passwords and issues the sessions every other request carries.
//
// # Clients
//
// A client is an id ([A-Za-z0-9._-]{1,128}), a password, an admin flag,
// its defaults for tasks (callback, retry policy, dispatch mode), its dead
// letter policy and the secret its webhooks are signed with. Clients live
// in the store and, for fast logins, in memory; every change goes through
// one Auth, which writes the store first. The signing secret is returned
// once, at registration; ListClients and Client never return it, nor the
// password hash.
//
// Bootstrap creates the first admin on an empty client table, with a
// given password or a generated one that the caller shows once. With
// clients already registered it changes nothing.
//
// DeregisterClient refuses the last admin (ErrLastAdmin) and a client that
// still has tasks (*HasTasksError, naming how many): cancel them first.
// The check and a registration by the same client racing with it are not
// ordered; a task registered in that window outlives its client and is
// dead-lettered when its delivery finds no client.
//
// # Passwords
//
// Passwords are stored only as argon2id hashes with a random 16-byte
// salt, encoded with their parameters in the PHC string format, so the
// cost can be raised later without invalidating existing hashes. Keys are
// compared in constant time. A login for an unknown client verifies a
// dummy hash, so it costs the same as a wrong password. At most
// Config.MaxConcurrentHashes hashes run at once, bounding the memory the
// KDF takes under a burst of logins.
//
// # Throttling
//
// After a failed login for a client id, further attempts for that id are
// refused at once with a *ThrottledError until a backoff has passed,
// without running the KDF. The backoff starts at Config.LoginBackoff and
// doubles with each consecutive failure up to Config.MaxLoginBackoff; a
// success, or a quiet period of twice the maximum, resets it. Attempts
// that start at the same moment are not serialized, so a guesser gains at
// most the KDF's parallelism. Ids that cannot exist (malformed) are
// refused at once.
//
// # Sessions
//
// A login issues a session: a random 256-bit id valid for
// Config.SessionTTL. Refresh issues a new id with a new expiry and ends
// the old one. Sessions live only in memory: they do not survive a
// restart, and clients log in again. An expired (or refreshed-away)
// session is remembered for Config.ExpiredRetention so it is answered
// with ErrSessionExpired rather than ErrUnknownSession. Each client keeps
// at most Config.MaxSessionsPerClient sessions; a login beyond that ends
// its oldest. Deregistering a client ends all of its sessions.
package auth
