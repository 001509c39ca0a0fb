package cluster

import (
	"testing"
	"time"

	"github.com/boomerangd/boomerang/internal/replica"
)

// The leader's next step towards a placement, one at a time, in order.
func TestNextStep(t *testing.T) {
	const me = 1
	alive := func(id uint64) bool { return id != 6 }
	p := Placement{Replicas: []uint64{1, 2, 4}, Leader: 4}
	for _, tc := range []struct {
		name     string
		status   replica.ShardStatus
		change   replica.ConfChangeType
		peer     uint64
		transfer uint64
	}{
		{"add the missing replica as a learner",
			replica.ShardStatus{Voters: []uint64{1, 2, 3}, Commit: 100, Match: map[uint64]uint64{1: 100, 2: 100, 3: 100}},
			replica.AddLearner, 4, 0},
		{"wait for a learner far behind",
			replica.ShardStatus{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}, Commit: 1000, Match: map[uint64]uint64{1: 1000, 2: 1000, 3: 1000, 4: 10}},
			0, 0, 0},
		{"promote a learner that caught up",
			replica.ShardStatus{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}, Commit: 1000, Match: map[uint64]uint64{1: 1000, 2: 1000, 3: 1000, 4: 990}},
			replica.Promote, 4, 0},
		{"remove a learner not placed once it caught up",
			replica.ShardStatus{Voters: []uint64{1, 2, 4}, Learners: []uint64{5}, Commit: 10, Match: map[uint64]uint64{1: 10, 2: 10, 4: 10, 5: 10}},
			replica.Remove, 5, 0},
		{"wait for a learner not placed that lags",
			replica.ShardStatus{Voters: []uint64{1, 2, 4}, Learners: []uint64{5}, Commit: 1000, Match: map[uint64]uint64{1: 1000, 2: 1000, 4: 1000, 5: 10}},
			0, 0, 0},
		{"wait for a learner not placed that has not answered yet",
			replica.ShardStatus{Voters: []uint64{1, 2, 4}, Learners: []uint64{5}, Commit: 1000, Match: map[uint64]uint64{1: 1000, 2: 1000, 4: 1000, 5: 0}, Active: map[uint64]bool{5: true}},
			0, 0, 0},
		{"remove a learner not placed that never answers",
			replica.ShardStatus{Voters: []uint64{1, 2, 4}, Learners: []uint64{5}, Commit: 1000, Match: map[uint64]uint64{1: 1000, 2: 1000, 4: 1000, 5: 0}, Active: map[uint64]bool{5: false}},
			replica.Remove, 5, 0},
		{"remove a lagging learner whose node is gone",
			replica.ShardStatus{Voters: []uint64{1, 2, 4}, Learners: []uint64{6}, Commit: 1000, Match: map[uint64]uint64{1: 1000, 2: 1000, 4: 1000, 6: 10}},
			replica.Remove, 6, 0},
		{"demote a voter not placed once all placed ones vote",
			replica.ShardStatus{Voters: []uint64{1, 2, 3, 4}, Commit: 10, Match: map[uint64]uint64{1: 10, 2: 10, 3: 10, 4: 10}},
			replica.Demote, 3, 0},
		{"transfer to the preferred leader",
			replica.ShardStatus{Voters: []uint64{1, 2, 4}, Commit: 10, Match: map[uint64]uint64{1: 10, 2: 10, 4: 10}},
			0, 0, 4},
		{"nothing while the preferred leader lags",
			replica.ShardStatus{Voters: []uint64{1, 2, 4}, Commit: 1000, Match: map[uint64]uint64{1: 1000, 2: 1000, 4: 3}},
			0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			change, peer, transfer := nextStep(p, tc.status, DefaultCatchUpLag, me, alive)
			if change != tc.change || peer != tc.peer || transfer != tc.transfer {
				t.Fatalf("got change %d peer %d transfer %d, want %d %d %d", change, peer, transfer, tc.change, tc.peer, tc.transfer)
			}
		})
	}
	// A leader the placement drops hands over before it is removed.
	gone := Placement{Replicas: []uint64{2, 3, 4}, Leader: 3}
	st := replica.ShardStatus{Voters: []uint64{1, 2, 3, 4}, Commit: 10, Match: map[uint64]uint64{1: 10, 2: 10, 3: 10, 4: 10}}
	if change, _, transfer := nextStep(gone, st, DefaultCatchUpLag, me, alive); change != 0 || transfer != 3 {
		t.Fatalf("a leaving leader: change %d, transfer to %d; want a transfer to 3", change, transfer)
	}
}

// The system group's learners stay learners, and a voter the placement
// makes a learner is demoted.
func TestNextStepLearners(t *testing.T) {
	alive := func(uint64) bool { return true }
	p := Placement{Replicas: []uint64{1, 2, 3}, Leader: 1, Learners: []uint64{4, 5}}
	caught := map[uint64]uint64{1: 10, 2: 10, 3: 10, 4: 10, 5: 10}
	for _, tc := range []struct {
		name   string
		status replica.ShardStatus
		change replica.ConfChangeType
		peer   uint64
	}{
		{"add a placed learner", replica.ShardStatus{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}, Commit: 10, Match: caught}, replica.AddLearner, 5},
		{"keep placed learners", replica.ShardStatus{Voters: []uint64{1, 2, 3}, Learners: []uint64{4, 5}, Commit: 10, Match: caught}, 0, 0},
		{"demote a voter placed as a learner", replica.ShardStatus{Voters: []uint64{1, 2, 3, 4}, Learners: []uint64{5}, Commit: 10, Match: caught}, replica.Demote, 4},
	} {
		change, peer, transfer := nextStep(p, tc.status, DefaultCatchUpLag, 1, alive)
		if change != tc.change || peer != tc.peer || transfer != 0 {
			t.Errorf("%s: got change %d peer %d transfer %d, want %d %d", tc.name, change, peer, transfer, tc.change, tc.peer)
		}
	}
}

// A copy not placed here goes once it does not vote and its group does
// not count it, or never received its group's configuration at all; a
// learner's copy after a grace, in which its leader removes it.
func TestDropsCopiesNotPlaced(t *testing.T) {
	const me = 3
	here := Placement{Replicas: []uint64{1, 2, 3}}
	elsewhere := Placement{Replicas: []uint64{1, 2, 4}}
	for _, tc := range []struct {
		name   string
		p      Placement
		status replica.ShardStatus
		after  time.Duration
		drop   bool
	}{
		{"placed here, not configured yet", here, replica.ShardStatus{}, 0, false},
		{"placed here, voting", here, replica.ShardStatus{Voters: []uint64{1, 2, 3}}, 0, false},
		{"placed here, a learner", here, replica.ShardStatus{Voters: []uint64{1, 2}, Learners: []uint64{3}}, time.Hour, false},
		{"placed elsewhere, still voting", elsewhere, replica.ShardStatus{Voters: []uint64{1, 2, 3, 4}}, time.Hour, false},
		{"placed elsewhere, demoted just now", elsewhere, replica.ShardStatus{Voters: []uint64{1, 2, 4}, Learners: []uint64{3}}, time.Second, false},
		{"placed elsewhere, demoted long ago", elsewhere, replica.ShardStatus{Voters: []uint64{1, 2, 4}, Learners: []uint64{3}}, learnerGrace, true},
		{"placed elsewhere, removed", elsewhere, replica.ShardStatus{Voters: []uint64{1, 2, 4}}, 0, true},
		{"placed elsewhere before it was ever added", elsewhere, replica.ShardStatus{}, 0, true},
	} {
		if got := drops(tc.p, tc.status, me, tc.after); got != tc.drop {
			t.Errorf("%s: drops = %v, want %v", tc.name, got, tc.drop)
		}
	}
}
