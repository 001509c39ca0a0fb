package store

import (
	"errors"
	"strings"
	"testing"
)

// A store created several directories deep survives a power loss right
// after its first commit: Open syncs every directory it creates into its
// parent.
func TestNewDirectoriesSurvivePowerLoss(t *testing.T) {
	t.Parallel()
	fs := NewMemFS()
	const dir = "/var/lib/boomerang/data"
	s, err := Open(dir, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	tk := task("acme", "g", 1, 10)
	commit(t, s, func(b *Batch) { b.PutTask(tk) })

	after := fs.Crash()
	closeStore(t, s)
	for _, d := range []string{"/var", "/var/lib", "/var/lib/boomerang", dir} {
		if !after.Exists(d) {
			t.Fatalf("%s is gone after a power loss", d)
		}
	}
	s, err = Open(dir, Options{FS: after})
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(t, s)
	if _, err := s.Task(tk.Id); err != nil {
		t.Fatalf("the acknowledged task after a power loss: %v", err)
	}
}

// A power loss keeps every synced commit and loses unsynced ones.
func TestPowerLossKeepsExactlyTheSyncedCommits(t *testing.T) {
	t.Parallel()
	fs := NewMemFS()
	s, err := Open("/data", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	synced, unsynced := task("acme", "g", 1, 10), task("acme", "g", 2, 20)
	commit(t, s, func(b *Batch) { b.PutTask(synced) })
	b := s.NewBatch()
	b.PutTask(unsynced)
	if err := s.CommitNoSync(b); err != nil {
		t.Fatal(err)
	}
	after := fs.Crash()
	closeStore(t, s)
	s, err = Open("/data", Options{FS: after})
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(t, s)
	if _, err := s.Task(synced.Id); err != nil {
		t.Errorf("synced task: %v", err)
	}
	if _, err := s.Task(unsynced.Id); !errors.Is(err, ErrNotFound) {
		t.Errorf("unsynced task after a power loss: %v, want ErrNotFound", err)
	}
}

// FailWrites makes commits fail as a bad disk would, and the store stays
// failed.
func TestMemFSFailWrites(t *testing.T) {
	t.Parallel()
	fs := NewMemFS()
	s, err := Open("/data", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fs.FailWrites(true)
	b := s.NewBatch()
	b.PutTask(task("acme", "g", 1, 10))
	if err := s.Commit(b); !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), ErrInjected.Error()) {
		t.Fatalf("Commit on a failing disk = %v, want ErrFailed naming the injected error", err)
	}
	fs.FailWrites(false)
	if _, err := s.Task(1); !errors.Is(err, ErrFailed) {
		t.Fatalf("read after the failure = %v, want ErrFailed", err)
	}
}
