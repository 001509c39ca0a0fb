package wheel_test

import (
	"fmt"
	"time"

	"github.com/boomerangd/boomerang/internal/wheel"
)

func Example() {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	w, err := wheel.New[string](wheel.Config{}, start)
	if err != nil {
		panic(err)
	}
	w.Add(start.Add(1500*time.Millisecond), "second")
	w.Add(start.Add(time.Second), "first")
	reminder := w.Add(start.Add(time.Hour), "cancelled")
	w.Add(start.Add(90*time.Minute), "later")
	w.Cancel(reminder)

	// The owner sleeps until NextExpiry, then advances to its clock's
	// time; here the clock jumps straight to each wake-up. A wake-up may
	// come early, at a cascade boundary, never late.
	fire := func(due time.Time, v string) { fmt.Println("fire", v, "due", due.Sub(start)) }
	for w.Len() > 1 {
		wake, _ := w.NextExpiry()
		fmt.Println("wake", wake.Sub(start))
		w.Advance(wake, fire)
	}
	fmt.Println(w.Len(), "pending")
	// Output:
	// wake 768ms
	// wake 1s
	// fire first due 1s
	// wake 1.28s
	// wake 1.5s
	// fire second due 1.5s
	// 1 pending
}
