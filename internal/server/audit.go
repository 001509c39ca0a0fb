package server

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/jonboulle/clockwork"
	"google.golang.org/protobuf/proto"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
)

// auditLog remembers the latest Config.Panel.AuditEntries operator actions (who
// did what to which client's data, when, and whether it worked), in
// memory: it starts empty at every start. Registering tasks is the
// clients' everyday work, not an operator action, and is not recorded;
// dry runs change nothing and are not recorded either.
type auditLog struct {
	clock clockwork.Clock

	mu      sync.Mutex
	entries []*boomerangv1.AuditEntry // ring, oldest at head
	head    int
	max     int
	nextID  uint64
}

func newAuditLog(clock clockwork.Clock, max int) *auditLog {
	return &auditLog{clock: clock, max: max}
}

// record notes an operation if it is an operator action.
func (l *auditLog) record(p auth.Principal, op string, req proto.Message, err error) {
	client, target, detail, ok := describe(p, req)
	if !ok {
		return
	}
	e := &boomerangv1.AuditEntry{
		AtMs: l.clock.Now().UnixMilli(), Actor: p.Client, Action: op,
		Client: client, Target: target, Detail: detail, Status: StatusOf(err),
	}
	if err != nil {
		e.Detail = strings.TrimSpace(e.Detail + " " + ErrorOf(err).Message)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nextID++
	e.Id = l.nextID
	if len(l.entries) < l.max {
		l.entries = append(l.entries, e)
		return
	}
	l.entries[l.head] = e
	l.head = (l.head + 1) % len(l.entries)
}

// list returns up to limit entries newest first, with ids below before
// (0: the newest) that visible accepts.
func (l *auditLog) list(before uint64, limit int, visible func(*boomerangv1.AuditEntry) bool) []*boomerangv1.AuditEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*boomerangv1.AuditEntry
	for i := len(l.entries) - 1; i >= 0 && len(out) < limit; i-- {
		e := l.entries[(l.head+i)%len(l.entries)]
		if (before == 0 || e.Id < before) && visible(e) {
			out = append(out, e)
		}
	}
	return out
}

// describe says which client's data an operator action changes, what it
// acts on and how; ok is false for anything else.
func describe(p auth.Principal, req proto.Message) (client, target, detail string, ok bool) {
	self := func(named string) string {
		if named == "" {
			return p.Client
		}
		return named
	}
	switch r := req.(type) {
	case *boomerangv1.UnblockGroupRequest:
		return self(r.Client), "group " + r.Group, "", true
	case *boomerangv1.SkipGroupRequest:
		return self(r.Client), "group " + r.Group, "", true
	case *boomerangv1.ReplayDeadLetterRequest:
		return "", fmt.Sprintf("dead letter %d", r.Id), "", true
	case *boomerangv1.DeleteDeadLetterRequest:
		return "", fmt.Sprintf("dead letter %d", r.Id), "", true
	case *boomerangv1.CancelTaskRequest:
		return "", fmt.Sprintf("task %d", r.Id), "", true
	case *boomerangv1.UpdateTaskRequest:
		return "", fmt.Sprintf("task %d", r.Id), updateDetail(r), true
	case *boomerangv1.CancelTasksRequest:
		return self(r.Client), groupTarget(r.Group), "", !r.DryRun
	case *boomerangv1.PurgeDeadLettersRequest:
		return r.Client, "dead letters", fmt.Sprintf("group=%q error~%q failed_before=%d", r.Group, r.ErrorContains, r.FailedBeforeMs), !r.DryRun
	case *boomerangv1.BulkDeadLettersRequest:
		return r.Client, "dead letters", fmt.Sprintf("%s group=%q error~%q payload~%q failed_before=%d after=%d",
			r.Action, r.Group, r.ErrorContains, r.PayloadContains, r.FailedBeforeMs, r.AfterId), !r.DryRun
	case *boomerangv1.RegisterClientRequest:
		return r.ClientId, "client " + r.ClientId, fmt.Sprintf("admin=%v", r.Admin), true
	case *boomerangv1.DeregisterClientRequest:
		return r.ClientId, "client " + r.ClientId, "", true
	}
	return "", "", "", false
}

func updateDetail(r *boomerangv1.UpdateTaskRequest) string {
	var parts []string
	if r.Payload != nil {
		parts = append(parts, fmt.Sprintf("payload (%d bytes)", len(r.Payload)))
	}
	switch w := r.When.(type) {
	case *boomerangv1.UpdateTaskRequest_DelayMs:
		parts = append(parts, fmt.Sprintf("delay %d ms", w.DelayMs))
	case *boomerangv1.UpdateTaskRequest_FireAtMs:
		parts = append(parts, fmt.Sprintf("fire at %d", w.FireAtMs))
	}
	if r.RepeatIntervalMs != nil {
		parts = append(parts, fmt.Sprintf("interval %d ms", *r.RepeatIntervalMs))
	}
	return strings.Join(parts, ", ")
}

func groupTarget(group string) string {
	if group == "" {
		return "all tasks"
	}
	return "group " + group
}

// audited records an operation in the audit log when it is an operator
// action. A NOT_LEADER answer is not: nothing was done, and the leader
// the client sends the request to records it.
func (s *Service) audited(p auth.Principal, op string, req any, err error) {
	var nl *NotLeaderError
	if m, ok := req.(proto.Message); ok && s.panel != nil && !errors.As(err, &nl) {
		s.panel.audit.record(p, op, m, err)
	}
}
