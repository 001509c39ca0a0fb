package server

import (
	"bufio"
	"io"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// writeLoop writes responses as they come, flushing whenever none is
// waiting, so under load many responses share one system call. A request
// releases its slot and its budget, and is counted in the metrics, once
// its response is flushed.
func (c *conn) writeLoop() {
	defer c.t.wg.Done()
	bw := bufio.NewWriterSize(c.nc, writeBuffer)
	var unflushed []outbound
	dead := false
	for o := range c.out {
		if !dead {
			if len(unflushed) == 0 {
				dead = c.nc.SetWriteDeadline(time.Now().Add(c.t.cfg.WriteTimeout)) != nil
			}
			if _, err := protodelim.MarshalTo(bw, o.resp); err != nil {
				dead = c.writeFailed(err)
			}
		}
		unflushed = append(unflushed, o)
		if len(c.out) > 0 && len(unflushed) < cap(c.out) {
			continue
		}
		if !dead {
			if err := bw.Flush(); err != nil {
				dead = c.writeFailed(err)
			}
		}
		c.settle(unflushed)
		unflushed = unflushed[:0]
	}
	c.settle(unflushed)
	c.close(dead)
	c.cancel()
	c.t.forget(c)
}

// settle counts flushed responses and frees their slots and budget.
func (c *conn) settle(batch []outbound) {
	now := time.Now()
	for _, o := range batch {
		c.release(o.hold)
		if o.final {
			continue
		}
		c.t.m.observe(o.op, responseStatus(o.resp), now.Sub(o.received))
		c.t.m.observeBatch(o.resp.GetRegisterTasks())
		<-c.slots
	}
}

// writeFailed drops a connection whose write failed; the reader then
// fails too. Responses still to come are discarded.
func (c *conn) writeFailed(err error) bool {
	_ = c.nc.Close()
	c.t.log.Debug("connection write failed; closing", "conn", c.id, "err", err)
	return true
}

// halfCloser is a connection whose sending side closes alone: TCP, and
// TLS after its handshake.
type halfCloser interface{ CloseWrite() error }

// close ends a connection whose responses are written. A healthy one is
// half-closed first and drained for up to CloseLinger: closing a socket
// with unread input resets it, and a reset can destroy responses the peer
// has not read yet.
func (c *conn) close(dead bool) {
	if hc, ok := c.nc.(halfCloser); ok && !dead && c.ctx.Err() == nil {
		if hc.CloseWrite() == nil {
			_ = c.nc.SetReadDeadline(time.Now().Add(c.t.cfg.CloseLinger))
			_, _ = io.Copy(io.Discard, c.nc)
		}
	}
	_ = c.nc.Close()
}

// responseStatus is OK for a result, else the error's status.
func responseStatus(r *boomerangv1.Response) boomerangv1.Status {
	if r.Error == nil {
		return boomerangv1.Status_STATUS_OK
	}
	return r.Error.Status
}
