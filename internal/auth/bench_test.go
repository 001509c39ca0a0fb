package auth

import (
	"testing"

	"github.com/boomerangd/boomerang/internal/replica"
	"github.com/boomerangd/boomerang/internal/store"
)

// benchAuth runs an Auth on a standalone node over a real store, with
// one client registered.
func benchAuth(b *testing.B) *Auth {
	b.Helper()
	st, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	a, err := New(st, Config{Hash: lightHash, SecretKeys: [][]byte{GenerateKey()}, LoginsPerSource: 1e9, LoginChecksPerSecond: 1e9, MaxSessionsPerClient: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	node, err := startSystem(a, st, replica.Config{ID: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		node.Stop()
		_ = st.Close()
	})
	if _, _, err := a.RegisterClient(ClientSpec{ID: "alice", Password: "alice-password"}); err != nil {
		b.Fatal(err)
	}
	return a
}

// BenchmarkAuthenticate is a session check, on every request's path: a
// read of the node's applied state. Baseline: the SHA-256 it starts
// with.
func BenchmarkAuthenticate(b *testing.B) {
	a := benchAuth(b)
	s, err := a.Login("alice", "alice-password", testSource)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("baseline=sha256", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = keyOf(s.ID)
			}
		})
	})
	b.Run("authenticate", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := a.Authenticate(s.ID); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkLogin is a login with a light password hash: the check, then
// the session's record committed (one synced log write) and applied.
// Baseline: a session ended, a record with no password check.
func BenchmarkLogin(b *testing.B) {
	a := benchAuth(b)
	b.Run("baseline=logout", func(b *testing.B) {
		ids := make([]string, 0, b.N)
		for range b.N {
			s, err := a.Login("alice", "alice-password", testSource)
			if err != nil {
				b.Fatal(err)
			}
			ids = append(ids, s.ID)
		}
		b.ResetTimer()
		for _, id := range ids {
			if err := a.Logout(id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("login", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.Login("alice", "alice-password", testSource); err != nil {
				b.Fatal(err)
			}
		}
	})
}
