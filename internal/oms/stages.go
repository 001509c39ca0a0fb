package oms

import (
	"fmt"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
	"github.com/boomerangd/boomerang/dispatch"
)

// handle runs one order through the pipeline on a worker goroutine:
// validate, risk, execute (accepted orders only), respond. Execution
// waits on a timer, not on the worker: the handler returns Later and the
// timer completes the task, so the account stays busy, and its next order
// waits, until the response has been queued.
func (s *Server) handle(t dispatch.Task[order]) dispatch.Result {
	o := t.Value()
	if s.cfg.beforeStages != nil {
		s.cfg.beforeStages(&o)
	}
	dispatchedNs := s.now()
	part := int32(t.Partition())
	reason, detail := validate(&o)
	if reason == omsv1.Reason_REASON_UNSPECIFIED {
		reason, detail = s.risk.check(&o)
	}
	if reason != omsv1.Reason_REASON_UNSPECIFIED {
		s.respond(&o, part, dispatchedNs, reason, detail)
		return dispatch.Success
	}
	d := execDelay(&o, s.cfg.Seed, s.cfg.ExecMin, s.cfg.ExecMax)
	if d <= 0 {
		s.respond(&o, part, dispatchedNs, reason, "")
		return dispatch.Success
	}
	s.cfg.Clock.AfterFunc(d, func() {
		// Queue the response before completing: the account's next order
		// can start only after Complete, so its response comes after.
		s.respond(&o, part, dispatchedNs, reason, "")
		t.Complete(dispatch.Success)
	})
	return dispatch.Later
}

// validate is stage 1: reject what is not a well-formed order.
func validate(o *order) (omsv1.Reason, string) {
	bad := omsv1.Reason_REASON_BAD_MSG
	switch {
	case o.undecodable != "":
		return bad, o.undecodable
	case o.symbol == "":
		return bad, "missing symbol"
	case o.side != omsv1.Side_SIDE_BUY && o.side != omsv1.Side_SIDE_SELL:
		return bad, fmt.Sprintf("unknown side %d", o.side)
	case o.quantity <= 0:
		return bad, fmt.Sprintf("quantity %d must be positive", o.quantity)
	case o.price <= 0:
		return bad, fmt.Sprintf("price %d must be positive", o.price)
	}
	return omsv1.Reason_REASON_UNSPECIFIED, ""
}

// respond is stage 4: build the response and queue it for the order's
// connection. reason UNSPECIFIED means ACK.
func (s *Server) respond(o *order, part int32, dispatchedNs int64, reason omsv1.Reason, detail string) {
	decision := omsv1.Decision_DECISION_ACK
	if reason != omsv1.Reason_REASON_UNSPECIFIED {
		decision = omsv1.Decision_DECISION_REJ
	}
	s.stats.decided(part, reason)
	o.conn.send(response{
		correlationID: o.correlationID,
		seq:           o.seq,
		clientOrderID: o.clientOrderID,
		partition:     part,
		decision:      decision,
		reason:        reason,
		detail:        detail,
		receivedNs:    o.receivedNs,
		dispatchedNs:  dispatchedNs,
		doneNs:        s.now(),
		clientTs:      o.clientTs,
	})
}

// refuse answers an order that never entered the pipeline (BUSY,
// GROUP_FULL, SHUTTING_DOWN, or an order whose handler panicked).
func (s *Server) refuse(o *order, part int32, reason omsv1.Reason, detail string) {
	s.stats.refused(reason)
	o.conn.send(response{
		correlationID: o.correlationID,
		seq:           o.seq,
		clientOrderID: o.clientOrderID,
		partition:     part,
		decision:      omsv1.Decision_DECISION_REJ,
		reason:        reason,
		detail:        detail,
		receivedNs:    o.receivedNs,
		doneNs:        s.now(),
		clientTs:      o.clientTs,
	})
}
