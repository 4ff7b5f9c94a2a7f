// Package devlog is the log format of `govkit dev`: one short line per
// record, for a person watching a terminal rather than for a log
// collector (the `serve` commands log JSON).
//
//	14:03:07 INFO  platform  GET /api/auth/me 200 2.1ms ip=127.0.0.1 auth=cookie user=2c9e…
//	14:03:09 INFO  notify    sms caught to=+12505550101 chars=74
//
// Each part of `govkit dev` logs through its own Logger(part). A request
// record — message "request" with method, path, status and duration
// attributes, as every part writes one — is shown as "METHOD PATH STATUS
// DURATION" followed by its other attributes; any other record as its
// message and attributes, quoted as slog's text format quotes them. Level,
// part and status are coloured when the output is a terminal (and NO_COLOR
// is unset).
package devlog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// Output is where `govkit dev` logs: a writer shared by every part, so
// that lines never interleave.
type Output struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
	level slog.Leveler
}

// New returns an Output writing to w, in colour when color is set, records
// at level and above (nil: info).
func New(w io.Writer, color bool, level slog.Leveler) *Output {
	if level == nil {
		level = slog.LevelInfo
	}
	return &Output{w: w, color: color, level: level}
}

// IsTerminal reports whether f is a terminal that should get colour: a
// character device, NO_COLOR unset and TERM not "dumb".
func IsTerminal(f *os.File) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Logger returns the logger of one part; part names the column.
func (o *Output) Logger(part string) *slog.Logger {
	return slog.New(&handler{out: o, part: part})
}

// handler formats records for an Output. Attributes added with WithAttrs
// and groups are kept by a slog.TextHandler that writes only attributes,
// so quoting and group prefixes are exactly slog's.
type handler struct {
	out   *Output
	part  string
	attrs []func(h slog.Handler) slog.Handler // WithAttrs and WithGroup, in order
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.out.level.Level() }

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(h.attrs[:len(h.attrs):len(h.attrs)], func(t slog.Handler) slog.Handler { return t.WithAttrs(as) })
	return &c
}

func (h *handler) WithGroup(name string) slog.Handler {
	c := *h
	c.attrs = append(h.attrs[:len(h.attrs):len(h.attrs)], func(t slog.Handler) slog.Handler { return t.WithGroup(name) })
	return &c
}

// ANSI colours.
const (
	reset  = "\x1b[0m"
	dim    = "\x1b[2m"
	bold   = "\x1b[1m"
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	blue   = "\x1b[34m"
	cyan   = "\x1b[36m"
)

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	paint := func(color, s string) {
		if h.out.color {
			b.WriteString(color + s + reset)
		} else {
			b.WriteString(s)
		}
	}
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	paint(dim, t.Format("15:04:05"))
	b.WriteByte(' ')
	level, levelColor := r.Level.String(), blue
	switch {
	case r.Level >= slog.LevelError:
		levelColor = red
	case r.Level >= slog.LevelWarn:
		levelColor = yellow
	case r.Level < slog.LevelInfo:
		levelColor = dim
	}
	paint(levelColor, fmt.Sprintf("%-5s", level))
	b.WriteByte(' ')
	paint(cyan, fmt.Sprintf("%-9s", h.part))
	b.WriteByte(' ')

	rest := slog.NewRecord(r.Time, r.Level, "", r.PC)
	if req, ok := requestLine(r); ok {
		b.WriteString(req.method + " " + req.path + " ")
		statusColor := green
		switch {
		case req.status >= 500:
			statusColor = red
		case req.status >= 400:
			statusColor = yellow
		}
		paint(statusColor, fmt.Sprint(req.status))
		b.WriteString(" " + req.duration.Round(100*time.Microsecond).String())
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "method", "path", "status", "duration":
			default:
				rest.AddAttrs(a)
			}
			return true
		})
	} else {
		if h.out.color && r.Level >= slog.LevelWarn {
			paint(bold, r.Message)
		} else {
			b.WriteString(r.Message)
		}
		r.Attrs(func(a slog.Attr) bool { rest.AddAttrs(a); return true })
	}
	attrs := h.formatAttrs(rest)
	if attrs != "" {
		b.WriteByte(' ')
		paint(dim, attrs)
	}
	b.WriteByte('\n')
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	_, err := h.out.w.Write(b.Bytes())
	return err
}

// formatAttrs renders the record's attributes (and those of WithAttrs)
// with slog's text quoting, without time, level or message.
func (h *handler) formatAttrs(r slog.Record) string {
	var b bytes.Buffer
	var th slog.Handler = slog.NewTextHandler(&b, &slog.HandlerOptions{
		Level: slog.LevelDebug - 100,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
				return slog.Attr{}
			}
			return a
		},
	})
	for _, f := range h.attrs {
		th = f(th)
	}
	_ = th.Handle(context.Background(), r)
	return strings.TrimSpace(b.String())
}

type request struct {
	method, path string
	status       int
	duration     time.Duration
}

// requestLine finds the attributes of a request record.
func requestLine(r slog.Record) (request, bool) {
	if r.Message != "request" {
		return request{}, false
	}
	var q request
	found := 0
	r.Attrs(func(a slog.Attr) bool {
		v := a.Value.Resolve()
		switch a.Key {
		case "method":
			q.method, found = v.String(), found+1
		case "path":
			q.path, found = v.String(), found+1
		case "status":
			if v.Kind() == slog.KindInt64 {
				q.status, found = int(v.Int64()), found+1
			}
		case "duration":
			if v.Kind() == slog.KindDuration {
				q.duration, found = v.Duration(), found+1
			}
		}
		return true
	})
	return q, found == 4
}
