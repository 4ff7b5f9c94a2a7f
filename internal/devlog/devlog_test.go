package devlog

import (
	"bytes"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"
)

var clock = regexp.MustCompile(`^\d\d:\d\d:\d\d `)

func TestLines(t *testing.T) {
	var b bytes.Buffer
	out := New(&b, false, nil)
	log := out.Logger("platform")
	tests := []struct {
		name string
		log  func()
		want string
	}{
		{"a request is method, path, status and duration, then the rest",
			func() {
				log.Info("request", "method", "GET", "path", "/api/auth/me", "status", 200, "duration", 2140*time.Microsecond, "ip", "127.0.0.1", "auth", "cookie")
			},
			"INFO  platform  GET /api/auth/me 200 2.1ms ip=127.0.0.1 auth=cookie"},
		{"any other record is its message and attributes, quoted as slog quotes them",
			func() { log.Warn("mail caught", "subject", "Hello there", "to", "a@b.test") },
			`WARN  platform  mail caught subject="Hello there" to=a@b.test`},
		{"attributes and groups of With come along",
			func() { log.With("node", "n1").WithGroup("g").Info("started", "port", 3000) },
			"INFO  platform  started node=n1 g.port=3000"},
		{"a record called request without the request attributes is an ordinary record",
			func() { log.Info("request", "method", "GET") },
			"INFO  platform  request method=GET"},
		{"debug records are dropped at the default level", func() { log.Debug("noise") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.Reset()
			tt.log()
			got := strings.TrimSuffix(clock.ReplaceAllString(b.String(), ""), "\n")
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			if tt.want != "" && !clock.MatchString(b.String()) {
				t.Errorf("line does not start with the time: %q", b.String())
			}
		})
	}
}

func TestColourOnlyWhenAsked(t *testing.T) {
	var plain, colour bytes.Buffer
	New(&plain, false, nil).Logger("notify").Error("boom", "status", 500)
	New(&colour, true, nil).Logger("notify").Error("boom", "status", 500)
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("escape codes without colour: %q", plain.String())
	}
	if !strings.Contains(colour.String(), red+"ERROR"+reset) {
		t.Errorf("the level is not red: %q", colour.String())
	}
}

func TestPartsShareOneWriterWithoutInterleaving(t *testing.T) {
	var b bytes.Buffer
	out := New(&b, false, slog.LevelInfo)
	done := make(chan struct{})
	for _, part := range []string{"a", "b"} {
		go func() {
			defer func() { done <- struct{}{} }()
			l := out.Logger(part)
			for range 200 {
				l.Info("line", "part", part)
			}
		}()
	}
	<-done
	<-done
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	line := regexp.MustCompile(`^\d\d:\d\d:\d\d INFO  ([ab])         line part=([ab])$`)
	for _, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil || m[1] != m[2] {
			t.Fatalf("mangled line %q", l)
		}
	}
}
