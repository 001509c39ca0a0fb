package testwait

import (
	"errors"
	"testing"
	"time"
)

func TestUntilChecksUntilTheConditionHolds(t *testing.T) {
	calls := 0
	if !Until(time.Minute, func() bool { calls++; return calls == 5 }) {
		t.Fatal("Until gave up on a condition that came true")
	}
	if calls != 5 {
		t.Fatalf("the condition was checked %d times, want 5", calls)
	}
}

func TestUntilGivesUp(t *testing.T) {
	calls := 0
	if Until(10*Every, func() bool { calls++; return false }) {
		t.Fatal("Until reported a condition that never held")
	}
	if calls < 2 {
		t.Fatalf("the condition was checked %d times", calls)
	}
}

// fakeTB records a failure instead of ending the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = format
}

func TestErrReportsTheLastError(t *testing.T) {
	f := &fakeTB{TB: t}
	Err(f, 5*Every, "nothing", func() error { return errors.New("still not") })
	if f.failed == "" {
		t.Fatal("Err did not fail on a condition that never held")
	}
}
