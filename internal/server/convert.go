package server

import (
	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/scheduler"
	"github.com/boomerangd/boomerang/internal/store"
	"github.com/boomerangd/boomerang/internal/store/storepb"
)

// The wire enums DispatchMode, Protocol and Backoff have the same numbers
// as the store's; values are checked before they are converted.

var taskStatuses = map[scheduler.Status]boomerangv1.TaskStatus{
	scheduler.StatusScheduled:  boomerangv1.TaskStatus_TASK_STATUS_SCHEDULED,
	scheduler.StatusQueued:     boomerangv1.TaskStatus_TASK_STATUS_QUEUED,
	scheduler.StatusDelivering: boomerangv1.TaskStatus_TASK_STATUS_DELIVERING,
	scheduler.StatusRetrying:   boomerangv1.TaskStatus_TASK_STATUS_RETRYING,
	scheduler.StatusFinished:   boomerangv1.TaskStatus_TASK_STATUS_FINISHED,
}

func taskToWire(v scheduler.TaskView) *boomerangv1.Task {
	t := v.Task
	if t == nil {
		return nil
	}
	return &boomerangv1.Task{
		Id:               t.Id,
		Client:           t.Client,
		Group:            t.Group,
		Payload:          t.Payload,
		FireAtMs:         t.DueMs,
		RepeatIntervalMs: t.IntervalMs,
		Seq:              t.Seq,
		Mode:             boomerangv1.DispatchMode(t.Mode),
		Status:           taskStatuses[v.Status],
		Attempts:         t.Attempts,
		NextAttemptMs:    t.NextAttemptMs,
		LastError:        t.LastError,
		Fires:            t.Fires,
		IdempotencyKey:   t.IdempotencyKey,
		Callback:         callbackToWire(t.Callback),
		Retry:            retryToWire(t.Retry),
		CreatedMs:        t.CreatedMs,
		UpdatedMs:        t.UpdatedMs,
		Cron:             t.Cron,
		TimeZone:         t.TimeZone,
		ReplaceKey:       t.ReplaceKey,
	}
}

func deadLetterToWire(d *storepb.DeadLetter) *boomerangv1.DeadLetter {
	return &boomerangv1.DeadLetter{
		Id:          store.DeadLetterID(d),
		Task:        taskToWire(scheduler.TaskView{Task: d.Task}),
		LastError:   d.LastError,
		Attempts:    d.Attempts,
		FailedMs:    d.FailedMs,
		BlocksGroup: d.BlocksGroup,
	}
}

func groupToWire(g *storepb.Group) *boomerangv1.Group {
	return &boomerangv1.Group{
		Client:              g.Client,
		Group:               g.Group,
		Tasks:               g.Tasks,
		Blocked:             g.BlockedTask != 0,
		BlockedDeadLetterId: g.BlockedTask, // the blocked head is a dead letter id
		BlockedSinceMs:      g.BlockedSinceMs,
	}
}

func clientToWire(c auth.ClientInfo) *boomerangv1.ClientConfig {
	cc := &boomerangv1.ClientConfig{
		Id:          c.Id,
		Admin:       c.Role == auth.RoleAdmin,
		Role:        roleToWire(c.Role),
		Callback:    callbackToWire(c.Callback),
		Retry:       retryToWire(c.Retry),
		DefaultMode: boomerangv1.DispatchMode(c.DefaultMode),
		CreatedMs:   c.CreatedMs,
		GroupLimit:  c.GroupLimit,

		GroupRateLimit:  rateToWire(c.GroupRateLimit),
		GroupRateLimits: ratesToWire(c.GroupRateLimits),
	}
	if c.DlqMaxEntries != 0 || c.DlqRetentionMs != 0 {
		cc.DeadLetters = &boomerangv1.DeadLetterPolicy{MaxEntries: c.DlqMaxEntries, RetentionMs: c.DlqRetentionMs}
	}
	if len(c.CallbackAllow) > 0 || len(c.CallbackDeny) > 0 {
		cc.CallbackRules = &boomerangv1.CallbackRules{Allow: c.CallbackAllow, Deny: c.CallbackDeny}
	}
	if !c.PreviousSecretUntil.IsZero() {
		cc.PreviousSecretExpiresMs = c.PreviousSecretUntil.UnixMilli()
	}
	return cc
}

var roles = map[auth.Role]boomerangv1.Role{
	auth.RoleClient:   boomerangv1.Role_ROLE_CLIENT,
	auth.RoleAdmin:    boomerangv1.Role_ROLE_ADMIN,
	auth.RoleReadOnly: boomerangv1.Role_ROLE_READ_ONLY,
}

func roleToWire(r auth.Role) boomerangv1.Role { return roles[r] }

// roleFromWire reads a role; UNSPECIFIED is ADMIN with the admin flag,
// else CLIENT. A role that contradicts the flag is refused.
func roleFromWire(r boomerangv1.Role, adminFlag bool) (auth.Role, error) {
	switch {
	case r == boomerangv1.Role_ROLE_UNSPECIFIED && adminFlag:
		return auth.RoleAdmin, nil
	case r == boomerangv1.Role_ROLE_UNSPECIFIED:
		return auth.RoleClient, nil
	case adminFlag && r != boomerangv1.Role_ROLE_ADMIN:
		return 0, invalid("role", "%s contradicts admin: true", r)
	}
	for role, wire := range roles {
		if wire == r {
			return role, nil
		}
	}
	return 0, invalid("role", "unknown role %d", r)
}

func callbackToWire(c *storepb.Callback) *boomerangv1.Callback {
	if c == nil {
		return nil
	}
	return &boomerangv1.Callback{
		Protocol: boomerangv1.Protocol(c.Protocol), Endpoint: c.Endpoint, TimeoutMs: c.TimeoutMs, Pool: c.Pool,
	}
}

func callbackFromWire(c *boomerangv1.Callback) *storepb.Callback {
	if c == nil {
		return nil
	}
	return &storepb.Callback{
		Protocol: storepb.Protocol(c.Protocol), Endpoint: c.Endpoint, TimeoutMs: c.TimeoutMs, Pool: c.Pool,
	}
}

func retryToWire(r *storepb.RetryPolicy) *boomerangv1.RetryPolicy {
	if r == nil {
		return nil
	}
	return &boomerangv1.RetryPolicy{
		Backoff: boomerangv1.Backoff(r.Backoff), InitialIntervalMs: r.InitialIntervalMs, MaxIntervalMs: r.MaxIntervalMs,
		Multiplier: r.Multiplier, Jitter: r.Jitter, MaxAttempts: r.MaxAttempts,
	}
}

func retryFromWire(r *boomerangv1.RetryPolicy) *storepb.RetryPolicy {
	if r == nil {
		return nil
	}
	return &storepb.RetryPolicy{
		Backoff: storepb.BackoffKind(r.Backoff), InitialIntervalMs: r.InitialIntervalMs, MaxIntervalMs: r.MaxIntervalMs,
		Multiplier: r.Multiplier, Jitter: r.Jitter, MaxAttempts: r.MaxAttempts,
	}
}

func toStoreMode(m boomerangv1.DispatchMode) storepb.DispatchMode { return storepb.DispatchMode(m) }

func attemptsToWire(list []attemptRecord) []*boomerangv1.Attempt {
	out := make([]*boomerangv1.Attempt, len(list))
	for i, a := range list {
		out[i] = &boomerangv1.Attempt{
			Attempt: a.number, FireAtMs: a.fireAtMs, StartedMs: a.started.UnixMilli(),
			DurationMs: float64(a.duration.Microseconds()) / 1000, Ok: a.ended && a.err == "", Error: a.err,
			Protocol: boomerangv1.Protocol(a.protocol), Running: !a.ended,
		}
	}
	return out
}

func sampleToWire(x sample) *boomerangv1.StatsSample {
	out := &boomerangv1.StatsSample{
		AtMs: x.at.UnixMilli(), Registered: x.sched.Registered, Attempts: x.sched.Attempts,
		Delivered: x.sched.Delivered, Failed: x.sched.Failed, DeadLettered: x.counts.deadLettered,
		DeadLetters: x.sched.DeadLetters, BlockedGroups: x.sched.Blocked, Delivering: x.sched.Delivering,
		Waiting: x.sched.Waiting, Wheel: x.sched.Wheel,
		FireLag: percentilesToWire(x.counts.lag), AttemptDuration: percentilesToWire(x.counts.took),
	}
	for p, c := range x.counts.byProtocol {
		if p != 0 && (c.delivered != 0 || c.failed != 0) {
			out.ByProtocol = append(out.ByProtocol, &boomerangv1.ProtocolCount{
				Protocol: boomerangv1.Protocol(p), Delivered: c.delivered, Failed: c.failed,
			})
		}
	}
	return out
}

func percentilesToWire(p percentiles) *boomerangv1.Percentiles {
	return &boomerangv1.Percentiles{Count: p.count, P50Ms: p.p50, P90Ms: p.p90, P99Ms: p.p99, MaxMs: p.max}
}
