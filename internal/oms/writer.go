package oms

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"

	omsv1 "github.com/boomerangd/boomerang/api/oms/v1"
)

// spareLimit is the largest batch buffer a writer keeps for reuse.
const spareLimit = 8192

// writeLoop is the connection's only writer. It takes whatever responses
// have queued up, writes them as one batch, and flushes once per batch, so
// under load many responses share one system call.
func (c *conn) writeLoop() {
	defer c.srv.writers.Done()
	bw := bufio.NewWriterSize(c.nc, writeBuffer)
	var m omsv1.Response
	var spare []response
	dead := false
	for {
		batch, last, isDead := c.take(spare)
		dead = isDead
		n := uint64(len(batch))
		if dead {
			c.srv.stats.dropped.Add(n)
		} else if err := c.write(bw, &m, batch); err != nil {
			c.writeFailed(err)
			dead = true
			c.srv.stats.dropped.Add(n)
		} else {
			c.srv.stats.answered.Add(n)
		}
		clear(batch) // drop detail strings
		spare = batch
		if cap(spare) > spareLimit {
			spare = nil // give back the memory of a burst
		}
		if last {
			break
		}
	}
	c.close(dead)
	c.srv.forget(c)
}

// writeFailed drops a connection whose write failed. A write that timed
// out means the client stopped reading: a slow consumer.
func (c *conn) writeFailed(err error) {
	c.kill()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.srv.stats.slowConsumers.Add(1)
		c.srv.log.Warn("slow consumer: write timed out, disconnecting",
			"conn", c.id, "remote", c.nc.RemoteAddr().String(), "timeout", c.srv.cfg.WriteTimeout)
		return
	}
	c.srv.log.Debug("connection write failed", "conn", c.id, "err", err)
}

func (c *conn) write(bw *bufio.Writer, m *omsv1.Response, batch []response) error {
	if len(batch) == 0 {
		return nil
	}
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout)); err != nil {
		return err
	}
	for i := range batch {
		batch[i].toProto(m)
		if _, err := protodelim.MarshalTo(bw, m); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// close ends a connection whose responses are all written. A healthy one
// is half-closed first and drained for up to CloseLinger: closing a socket
// with unread input resets it, and a reset can destroy responses the peer
// has not read yet.
func (c *conn) close(dead bool) {
	if tc, ok := c.nc.(*net.TCPConn); ok && !dead {
		if tc.CloseWrite() == nil {
			_ = c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.CloseLinger))
			_, _ = io.Copy(io.Discard, c.nc)
		}
	}
	_ = c.nc.Close()
}
