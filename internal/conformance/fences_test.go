package conformance

import (
	"encoding/json"
	"strconv"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

// fenceKey is a delivery and the key a fence keeps its term under.
type fenceKey struct {
	Name     string          `json:"name"`
	Delivery json.RawMessage `json:"delivery"`
	Key      string          `json:"key"`
}

// fenceStep is one Admit call and its answer.
type fenceStep struct {
	Key      string `json:"key"`
	Term     string `json:"term"`
	Admitted bool   `json:"admitted"`
}

// fenceSequence is Admit calls on one fence of the given capacity, in
// order, and how many it refused.
type fenceSequence struct {
	Name     string      `json:"name"`
	Capacity int         `json:"capacity"`
	Steps    []fenceStep `json:"steps"`
	Stale    uint64      `json:"stale"`
}

type fences struct {
	Format    int             `json:"format"`
	Comment   string          `json:"comment"`
	Keys      []fenceKey      `json:"keys"`
	Sequences []fenceSequence `json:"sequences"`
}

// admit is one Admit call of a sequence.
type admit struct {
	key  string
	term uint64
}

// fenceSequences are the sequences of fences.json, before they are run.
var fenceSequences = []struct {
	name     string
	capacity int
	calls    []admit
}{
	// The worked example of docs/callbacks.md.
	{"docs_example", 8, []admit{{"billing/customer 7", 4}, {"billing/customer 7", 5}, {"billing/customer 7", 5}, {"billing/customer 7", 4}, {"billing/customer 9", 1}, {"billing#31", 2}}},
	{"one_group", 8, []admit{{"billing/g", 3}, {"billing/g", 3}, {"billing/g", 2}, {"billing/g", 4}, {"billing/g", 3}, {"billing/g", 0}}},
	{"keys_are_independent", 8, []admit{{"billing/a", 5}, {"billing/b", 1}, {"billing/a", 4}, {"billing/b", 1}, {"billing/b", 0}, {"billing#7", 2}, {"billing#7", 1}, {"shipping/a", 1}}},
	// The least recently used key is forgotten: its next term is admitted.
	{"least_recently_used_out", 2, []admit{{"c/a", 5}, {"c/b", 5}, {"c/a", 4}, {"c/c", 1}, {"c/b", 1}, {"c/a", 1}, {"c/b", 0}}},
	{"terms_over_53_bits", 8, []admit{{"c/a", bigID}, {"c/a", bigID - 1}, {"c/a", maxID}, {"c/a", maxID - 1}, {"c/a", maxID}}},
}

// fencesFile holds what a Fence keys a delivery under and how it answers
// sequences of Admit calls, as client.Fence does.
func fencesFile(t *testing.T) fences {
	f := fences{Format: formatVersion, Comment: "Fencing by term: the key a delivery is fenced under, and sequences of admit calls on a fence of a given capacity with their answers. See README.md."}
	for _, k := range []struct {
		name string
		d    *boomerangv1.Delivery
	}{
		{"grouped", &boomerangv1.Delivery{TaskId: taskID, Client: "billing", Group: "customer 7", Term: 3}},
		{"grouped_escaped_names", &boomerangv1.Delivery{TaskId: 2, Client: "acme.corp_eu-1~x", Group: "Zürich/ä 100% #1", Term: 1}},
		{"group_like_an_ungrouped_key", &boomerangv1.Delivery{TaskId: 5, Client: "billing", Group: "#1", Term: 1}},
		{"ungrouped", &boomerangv1.Delivery{TaskId: maxID, Client: "quick", Term: bigID}},
	} {
		f.Keys = append(f.Keys, fenceKey{Name: k.name, Delivery: protoJSON(t, k.d), Key: client.FenceKey(k.d)})
	}
	for _, s := range fenceSequences {
		fence := client.NewFence(s.capacity)
		seq := fenceSequence{Name: s.name, Capacity: s.capacity}
		for _, c := range s.calls {
			seq.Steps = append(seq.Steps, fenceStep{Key: c.key, Term: strconv.FormatUint(c.term, 10), Admitted: fence.Admit(c.key, c.term)})
		}
		seq.Stale = fence.Stale()
		f.Sequences = append(f.Sequences, seq)
	}
	return f
}

func checkFences(t *testing.T) {
	var f fences
	load(t, "fences.json", &f)
	for _, k := range f.Keys {
		var d boomerangv1.Delivery
		if err := protojson.Unmarshal(k.Delivery, &d); err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		if got := client.FenceKey(&d); got != k.Key {
			t.Errorf("%s: key %q, want %q", k.Name, got, k.Key)
		}
	}
	for _, s := range f.Sequences {
		fence := client.NewFence(s.Capacity)
		for i, step := range s.Steps {
			term, err := strconv.ParseUint(step.Term, 10, 64)
			if err != nil {
				t.Fatalf("%s step %d: %v", s.Name, i, err)
			}
			if got := fence.Admit(step.Key, term); got != step.Admitted {
				t.Errorf("%s step %d: Admit(%q, %d) = %v, want %v", s.Name, i, step.Key, term, got, step.Admitted)
			}
		}
		if fence.Stale() != s.Stale {
			t.Errorf("%s: %d stale, want %d", s.Name, fence.Stale(), s.Stale)
		}
	}
}
