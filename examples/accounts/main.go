// Command accounts shows the dispatch engine on its own: many accounts
// submit orders concurrently, each account's orders run one at a time in
// order, accounts run in parallel, and the program checks the order and
// prints the engine's counters.
//
//	go run ./examples/accounts -accounts 1000 -orders 200000
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/boomerangd/boomerang/dispatch"
)

type order struct {
	account int64
	seq     int64
}

func main() {
	accounts := flag.Int("accounts", 1000, "number of accounts (families)")
	orders := flag.Int("orders", 200_000, "total orders to submit")
	producers := flag.Int("producers", 4, "submitting goroutines")
	work := flag.Duration("work", 0, "simulated time per order, done asynchronously")
	flag.Parse()
	if *accounts < 1 || *orders < 1 || *producers < 1 {
		log.Fatal("accounts, orders and producers must be positive")
	}

	// last[a] is only touched by account a's handler, which the engine runs
	// one at a time per account: no lock needed, and -race would notice.
	last := make([]int64, *accounts+1)
	var violations, done atomic.Int64
	eng, err := dispatch.New(dispatch.Config[order]{
		Handler: func(t dispatch.Task[order]) dispatch.Result {
			o := t.Value()
			if o.seq != last[o.account]+1 {
				violations.Add(1)
			}
			last[o.account] = o.seq
			done.Add(1)
			if *work > 0 {
				time.AfterFunc(*work, func() { t.Complete(dispatch.Success) })
				return dispatch.Later
			}
			return dispatch.Success
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	start := time.Now()
	var busy atomic.Int64
	var wg sync.WaitGroup
	perAccount := max(1, *orders / *accounts)
	for p := range *producers {
		wg.Go(func() {
			// Producer p owns accounts p+1, p+1+producers, ... so each
			// account's orders are submitted in sequence by one goroutine.
			for seq := int64(1); seq <= int64(perAccount); seq++ {
				for a := int64(p + 1); a <= int64(*accounts); a += int64(*producers) {
					for eng.TrySubmit(dispatch.IntKey(a), order{a, seq}) != nil {
						busy.Add(1)
						runtime.Gosched()
					}
				}
			}
		})
	}
	wg.Wait()
	if err := eng.Close(context.Background()); err != nil {
		log.Fatal(err)
	}
	elapsed := time.Since(start)

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "partition\tsubmitted\tdispatched\tcompleted\tqueued behind busy\tmax depth\t")
	for _, s := range eng.Stats() {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t\n", s.Partition, s.Submitted, s.Dispatched, s.Completed, s.QueuedBehindBusy, s.MaxPendingDepth)
	}
	tw.Flush()
	fmt.Printf("\n%d orders over %d accounts in %v (%.0f orders/s), %d busy retries, %d order violations\n",
		done.Load(), *accounts, elapsed.Round(time.Millisecond), float64(done.Load())/elapsed.Seconds(), busy.Load(), violations.Load())
	if violations.Load() > 0 {
		os.Exit(1)
	}
}
