package server

import (
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// A cron task shows its schedule, and GetTask its next occurrences.
func TestCronTask(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	task := ts.register(t, alice, &boomerangv1.RegisterTaskRequest{Cron: "0 9 * * MON-FRI", TimeZone: "Europe/Zurich"})
	zurich, err := time.LoadLocation("Europe/Zurich")
	if err != nil {
		t.Fatal(err)
	}
	// epoch is Thursday 1 January 2026, 01:00 in Zurich.
	first := time.Date(2026, 1, 1, 9, 0, 0, 0, zurich)
	if task.Cron != "0 9 * * MON-FRI" || task.TimeZone != "Europe/Zurich" || task.FireAtMs != first.UnixMilli() {
		t.Fatalf("registered %v", task)
	}
	got, err := ts.svc.GetTask(ctx, alice, &boomerangv1.GetTaskRequest{Id: task.Id})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Time{ // Friday, then Monday to Thursday
		time.Date(2026, 1, 2, 9, 0, 0, 0, zurich), time.Date(2026, 1, 5, 9, 0, 0, 0, zurich),
		time.Date(2026, 1, 6, 9, 0, 0, 0, zurich), time.Date(2026, 1, 7, 9, 0, 0, 0, zurich),
		time.Date(2026, 1, 8, 9, 0, 0, 0, zurich),
	}
	if len(got.Task.NextFireAtMs) != len(want) {
		t.Fatalf("next occurrences %v", got.Task.NextFireAtMs)
	}
	for i, w := range want {
		if got.Task.NextFireAtMs[i] != w.UnixMilli() {
			t.Fatalf("occurrence %d: %v, want %v", i, time.UnixMilli(got.Task.NextFireAtMs[i]).In(zurich), w)
		}
	}
	recurring := true
	list, err := ts.svc.ListTasks(ctx, alice, &boomerangv1.ListTasksRequest{Recurring: &recurring})
	if err != nil || len(list.Tasks) != 1 {
		t.Fatalf("recurring tasks: %v, %v", list.GetTasks(), err)
	}
}

// UpdateTask gives a task a cron schedule, or takes it away.
func TestUpdateCron(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	task := ts.register(t, alice, &boomerangv1.RegisterTaskRequest{When: delay(3_600_000)})
	half := "30 * * * *"
	up, err := ts.svc.UpdateTask(ctx, alice, &boomerangv1.UpdateTaskRequest{Id: task.Id, Cron: &half})
	if err != nil || up.Task.Cron != half || up.Task.FireAtMs != epoch.Add(30*time.Minute).UnixMilli() {
		t.Fatalf("update to cron: %v, %v", up, err)
	}
	every := int64(60_000)
	_, err = ts.svc.UpdateTask(ctx, alice, &boomerangv1.UpdateTaskRequest{Id: task.Id, Cron: &half, RepeatIntervalMs: &every})
	wantError(t, err, boomerangv1.Status_STATUS_INVALID_REQUEST, "cron")
	none := ""
	if up, err = ts.svc.UpdateTask(ctx, alice, &boomerangv1.UpdateTaskRequest{Id: task.Id, Cron: &none}); err != nil || up.Task.Cron != "" {
		t.Fatalf("update to one-shot: %v, %v", up, err)
	}
}
