package server

import (
	"testing"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// A registration with a replace key says whether it replaced a waiting
// task, alone and in a batch.
func TestReplaceKeyResponses(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	ts.addClients(t)
	first, err := ts.svc.RegisterTask(ctx, alice, &boomerangv1.RegisterTaskRequest{Payload: []byte("v1"), Group: "g", ReplaceKey: "k", DebounceMs: 60_000})
	if err != nil || !first.Created || first.Replaced || first.Task.ReplaceKey != "k" || first.Task.FireAtMs != epoch.UnixMilli()+60_000 {
		t.Fatalf("first: %v, %v", first, err)
	}
	ts.clock.Advance(10 * time.Second)
	second, err := ts.svc.RegisterTask(ctx, alice, &boomerangv1.RegisterTaskRequest{Payload: []byte("v2"), Group: "g", ReplaceKey: "k", DebounceMs: 60_000})
	if err != nil || second.Created || !second.Replaced || second.Task.Id != first.Task.Id || string(second.Task.Payload) != "v2" ||
		second.Task.FireAtMs != epoch.UnixMilli()+70_000 {
		t.Fatalf("second: %v, %v", second, err)
	}
	batch, err := ts.svc.RegisterTasks(ctx, alice, &boomerangv1.RegisterTasksRequest{Tasks: []*boomerangv1.RegisterTaskRequest{
		{Payload: []byte("v3"), Group: "g", ReplaceKey: "k"},
		{Payload: []byte("other"), Group: "g", ReplaceKey: "other"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r := batch.Results[0].GetRegistered(); r == nil || !r.Replaced || r.Created || r.Task.Id != first.Task.Id {
		t.Fatalf("batch replacement: %v", batch.Results[0])
	}
	if r := batch.Results[1].GetRegistered(); r == nil || r.Replaced || !r.Created {
		t.Fatalf("batch creation: %v", batch.Results[1])
	}
}
