package inbound

import (
	"net"
	"testing"
	"time"
)

// deadlines records the read deadline a conn sets.
type deadlines struct {
	net.Conn
	read time.Time
}

func (d *deadlines) SetReadDeadline(t time.Time) error  { d.read = t; return nil }
func (d *deadlines) SetWriteDeadline(t time.Time) error { return nil }

func TestConnReadDeadlines(t *testing.T) {
	now := time.Now()
	rec := &deadlines{}
	// The last step of a transaction was a while ago: one minute of idle
	// time is left, three of the session.
	c := &conn{Conn: rec, idle: 2 * time.Hour, idleEnd: now.Add(time.Minute), readEnd: now.Add(3 * time.Hour)}
	asked := now.Add(90 * time.Minute)
	if err := c.SetReadDeadline(asked); err != nil {
		t.Fatal(err)
	}
	if !rec.read.Equal(c.idleEnd) {
		t.Fatalf("read deadline %v, want the idle end %v", rec.read, c.idleEnd)
	}
	t.Run("a step of a transaction gives the read under way the deadline it asked for", func(t *testing.T) {
		c.progress()
		if !rec.read.Equal(asked) {
			t.Fatalf("read deadline %v, want %v", rec.read, asked)
		}
	})
	t.Run("no read waits past the session's end", func(t *testing.T) {
		if err := c.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		if want := c.idleEnd; !rec.read.Equal(want) {
			t.Fatalf("read deadline %v, want the idle end %v", rec.read, want)
		}
		c.readEnd = now.Add(time.Second)
		if err := c.SetReadDeadline(asked); err != nil {
			t.Fatal(err)
		}
		if !rec.read.Equal(c.readEnd) {
			t.Fatalf("read deadline %v, want the session's end %v", rec.read, c.readEnd)
		}
	})
}
