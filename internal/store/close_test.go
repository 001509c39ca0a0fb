package store

import (
	"errors"
	"runtime"
	"testing"

	"github.com/boomerangd/boomerang/internal/store/storepb"
)

func TestClosedStoreRefusesEverything(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	b.PutClient(client("acme"))
	closeStore(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}
	calls := map[string]error{
		"Commit":          s.Commit(b),
		"Task":            second(s.Task(1)),
		"Group":           second(s.Group(0, "a", "b")),
		"Idempotency":     third(s.Idempotency(0, "a", "k")),
		"ShardMeta":       second(s.ShardMeta(0)),
		"DeadLetter":      second(s.DeadLetter(1)),
		"Client":          second(s.Client("acme")),
		"ListClients":     second(s.ListClients()),
		"ListTasks":       third(s.ListTasks(TaskQuery{})),
		"ListDeadLetters": third(s.ListDeadLetters("", 0, 0)),
		"ScanDue":         s.ScanDue(0, minDue, maxDue, func(DueEntry) error { return nil }),
		"ScanGroups":      s.ScanGroups(0, func(*storepb.Group) error { return nil }),
	}
	for name, err := range calls {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if st := s.Stats(); st.DiskBytes != 0 {
		t.Errorf("Stats after Close reads the closed DB: %+v", st)
	}
}

// TestCloseWaitsForOperations: Close waits for a scan in progress, and a
// read nested in the scan's callback fails fast instead of deadlocking.
func TestCloseWaitsForOperations(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tk := task("acme", "orders", 1, 5)
	commit(t, s, func(b *Batch) { b.PutTask(tk) })

	closed := make(chan error, 1)
	var nested error
	scanErr := s.ScanDue(ShardOf(tk.Id), minDue, maxDue, func(DueEntry) error {
		go func() { closed <- s.Close() }()
		for !s.gate.IsShut() { // until Close has shut the gate
			runtime.Gosched()
		}
		select {
		case err := <-closed:
			t.Errorf("Close returned (%v) while a scan was running", err)
		default:
		}
		_, nested = s.Task(tk.Id)
		return nil
	})
	if scanErr != nil {
		t.Fatalf("ScanDue = %v", scanErr)
	}
	if !errors.Is(nested, ErrClosed) {
		t.Errorf("read inside the callback during Close = %v, want ErrClosed", nested)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close = %v", err)
	}
}
