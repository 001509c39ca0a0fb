package dispatch_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/boomerangd/boomerang/dispatch"
)

// Orders of one account run one at a time, in order; accounts run in
// parallel.
func Example() {
	type order struct {
		account int64
		n       int
	}
	var mu sync.Mutex
	seen := map[int64][]int{}
	eng, err := dispatch.New(dispatch.Config[order]{
		Handler: func(t dispatch.Task[order]) dispatch.Result {
			o := t.Value()
			mu.Lock()
			seen[o.account] = append(seen[o.account], o.n)
			mu.Unlock()
			return dispatch.Success
		},
	})
	if err != nil {
		panic(err)
	}
	for n := 1; n <= 3; n++ {
		for _, acct := range []int64{7, 8} {
			if err := eng.TrySubmit(dispatch.IntKey(acct), order{acct, n}); err != nil {
				panic(err) // ErrBusy or ErrGroupFull: shed or retry
			}
		}
	}
	if err := eng.Close(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println(seen[7], seen[8])
	// Output: [1 2 3] [1 2 3]
}

// A handler that finishes later, from another goroutine: the family stays
// busy, so the next task of the same key waits for Complete.
func ExampleTask_Complete() {
	done := make(chan string, 2)
	eng, err := dispatch.New(dispatch.Config[string]{
		Handler: func(t dispatch.Task[string]) dispatch.Result {
			go func() {
				done <- t.Value() // e.g. a network call
				t.Complete(dispatch.Success)
			}()
			return dispatch.Later
		},
	})
	if err != nil {
		panic(err)
	}
	_ = eng.TrySubmit(dispatch.StringKey("customer-42"), "first")
	_ = eng.TrySubmit(dispatch.StringKey("customer-42"), "second")
	fmt.Println(<-done, <-done)
	_ = eng.Close(context.Background())
	// Output: first second
}

// With BlockOnError a failed task halts its family until an operator
// decides: Unblock runs it again, Skip drops it.
func ExampleEngine_Unblock() {
	ran := make(chan string, 4)
	eng, err := dispatch.New(dispatch.Config[string]{
		Handler: func(t dispatch.Task[string]) dispatch.Result {
			if t.Value() == "charge" && t.Attempt() == 1 {
				return dispatch.Failure // e.g. the payment service was down
			}
			ran <- fmt.Sprintf("%s (attempt %d)", t.Value(), t.Attempt())
			return dispatch.Success
		},
	})
	if err != nil {
		panic(err)
	}
	key := dispatch.StringKey("invoice-9")
	_ = eng.TrySubmitMode(key, dispatch.BlockOnError, "charge")
	_ = eng.TrySubmitMode(key, dispatch.BlockOnError, "email receipt")
	for eng.Unblock(key) == dispatch.ErrNotBlocked {
		// not failed yet; a real operator would look at Stats or an alert
	}
	fmt.Println(<-ran)
	fmt.Println(<-ran)
	_ = eng.Close(context.Background())
	// Output:
	// charge (attempt 2)
	// email receipt (attempt 1)
}
