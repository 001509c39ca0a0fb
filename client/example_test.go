package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// An admin registers a client with the endpoint its tasks are delivered
// to; the signing secret for webhook signatures is shown only here.
func ExampleClient_RegisterClient() {
	ctx := context.Background()
	admin, err := client.Dial(ctx, addr, client.Credentials{ClientID: adminID, Password: adminPassword})
	if err != nil {
		log.Fatal(err)
	}
	defer admin.Close()

	resp, err := admin.RegisterClient(ctx, &boomerangv1.RegisterClientRequest{
		ClientId: "billing",
		Password: "billing-password",
		Callback: &boomerangv1.Callback{Protocol: boomerangv1.Protocol_PROTOCOL_HTTP, Endpoint: "http://127.0.0.1:8080/hooks"},
		Retry:    &boomerangv1.RetryPolicy{Backoff: boomerangv1.Backoff_BACKOFF_EXPONENTIAL, InitialIntervalMs: 1000, MaxAttempts: 5},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("registered", resp.GetClient().GetId(), "with a", len(resp.GetSigningSecret()), "byte signing secret")
	// Output: registered billing with a 32 byte signing secret
}

// Schedule a task: its payload comes back to the client's endpoint in 90
// seconds, after the earlier tasks of its group.
func ExampleClient_Schedule() {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, client.Credentials{ClientID: "billing", Password: "billing-password"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	task, err := c.Schedule(ctx, []byte("invoice 42"),
		client.After(90*time.Second),
		client.InGroup("customer-7"),
		client.WithIdempotencyKey("invoice-42-reminder"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(task.GetGroup(), string(task.GetPayload()), task.GetStatus())

	// The same idempotency key returns the same task: safe to retry.
	again, err := c.Schedule(ctx, []byte("invoice 42"), client.After(90*time.Second), client.InGroup("customer-7"),
		client.WithIdempotencyKey("invoice-42-reminder"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same task:", again.GetId() == task.GetId())
	// Output:
	// customer-7 invoice 42 TASK_STATUS_SCHEDULED
	// same task: true
}

// Tasks pages through every task a query selects.
func ExampleClient_Tasks() {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, client.Credentials{ClientID: "billing", Password: "billing-password"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	for i := range 3 {
		if _, err := c.Schedule(ctx, fmt.Appendf(nil, "report %d", i), client.After(time.Hour), client.Every(24*time.Hour), client.InGroup("reports")); err != nil {
			log.Fatal(err)
		}
	}
	for task, err := range c.Tasks(ctx, &boomerangv1.ListTasksRequest{Group: "reports"}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s every %v\n", task.GetPayload(), time.Duration(task.GetRepeatIntervalMs())*time.Millisecond)
	}
	// Output:
	// report 0 every 24h0m0s
	// report 1 every 24h0m0s
	// report 2 every 24h0m0s
}

// ScheduleBatch registers many tasks at once; each succeeds or fails on
// its own.
func ExampleClient_ScheduleBatch() {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, client.Credentials{ClientID: "billing", Password: "billing-password"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	results, err := c.ScheduleBatch(ctx,
		client.NewTask([]byte("invoice 7"), client.After(time.Hour), client.InGroup("customer-7")),
		client.NewTask([]byte("invoice 8"), client.After(time.Hour), client.InGroup("customer-8")),
		client.NewTask([]byte("ping"), client.Every(-time.Minute)),
	)
	if err != nil {
		log.Fatal(err) // a whole request failed: its tasks carry the error too
	}
	for _, r := range results {
		if r.Err != nil {
			fmt.Println("refused:", client.StatusOf(r.Err))
			continue
		}
		fmt.Println("scheduled in", r.Task.GetGroup())
	}
	// Output:
	// scheduled in customer-7
	// scheduled in customer-8
	// refused: STATUS_INVALID_REQUEST
}

// Refused requests are *client.Error values that match the sentinel of
// their status.
func ExampleError() {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, client.Credentials{ClientID: "billing", Password: "billing-password"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	_, err = c.GetTask(ctx, &boomerangv1.GetTaskRequest{Id: 1})
	fmt.Println(errors.Is(err, client.ErrNotFound))

	_, err = c.Schedule(ctx, nil, client.Every(-time.Second))
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Field)
	}
	// Output:
	// true
	// STATUS_INVALID_REQUEST repeat_interval_ms
}

// Dial with a saved session instead of credentials, as a command-line
// tool does between runs. Without credentials the Client cannot log in
// again, so an expired session is reported as ErrSessionExpired.
func ExampleWithSession() {
	ctx := context.Background()
	first, err := client.Dial(ctx, addr, client.Credentials{ClientID: "billing", Password: "billing-password"})
	if err != nil {
		log.Fatal(err)
	}
	saved := first.Session()
	first.Close()

	c, err := client.Dial(ctx, addr, client.Credentials{}, client.WithSession(saved))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println(c.Session().ID == saved.ID)
	// Output: true
}

// A task that fires at nine in the morning, Zurich time, on weekdays.
func ExampleCron() {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, client.Credentials{ClientID: adminID, Password: adminPassword})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	task, err := c.Schedule(ctx, []byte("daily report"), client.Cron("0 9 * * MON-FRI", "Europe/Zurich"))
	if err != nil {
		log.Fatal(err)
	}
	zurich, err := time.LoadLocation("Europe/Zurich")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(task.GetCron(), "in", task.GetTimeZone(), "next at", time.UnixMilli(task.GetFireAtMs()).In(zurich).Format("15:04"))
	// Output: 0 9 * * MON-FRI in Europe/Zurich next at 09:00
}

// A burst of registrations with one replace key delivers once: each
// replaces the waiting task and pushes it back, up to the maximum wait.
func ExampleReplacing() {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, client.Credentials{ClientID: adminID, Password: adminPassword})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	first, err := c.Schedule(ctx, []byte("reindex 1"), client.Replacing("reindex"), client.Debounce(30*time.Second, 5*time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	resp, err := c.RegisterTask(ctx, &boomerangv1.RegisterTaskRequest{
		Payload: []byte("reindex 2"), ReplaceKey: "reindex", DebounceMs: 30_000, MaxWaitMs: 300_000,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("replaced:", resp.GetReplaced(), "same task:", resp.GetTask().GetId() == first.GetId())
	// Output: replaced: true same task: true
}
