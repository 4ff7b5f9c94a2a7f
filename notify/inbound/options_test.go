package inbound

import (
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
)

func TestParseOptions(t *testing.T) {
	t.Run("defaults: STARTTLS offered, no implicit TLS", func(t *testing.T) {
		o, w, err := parseOptions(nil)
		if err != nil || len(w) != 0 || !o.startTLS || o.secure || o.maxClients != DefaultMaxClients || o.socketTimeout != DefaultSocketTimeout ||
			o.maxClientsPerAddress != DefaultMaxClientsPerAddress || o.idleTimeout != DefaultIdleTimeout || o.maxSessionTime != DefaultMaxSessionTime {
			t.Fatalf("%+v %v %v", o, w, err)
		}
	})
	t.Run("our connection limits are read", func(t *testing.T) {
		o, w, err := parseOptions(map[string]any{"maxClientsPerAddress": 2.0, "idleTimeout": 15000.0, "maxSessionTime": 120000.0})
		if err != nil || len(w) != 0 || o.maxClientsPerAddress != 2 || o.idleTimeout != 15*time.Second || o.maxSessionTime != 2*time.Minute {
			t.Fatalf("%+v %v %v", o, w, err)
		}
	})
	t.Run("maxClients below the per-address default bounds it", func(t *testing.T) {
		o, _, _ := parseOptions(map[string]any{"maxClients": 3.0})
		if o.maxClientsPerAddress != 3 {
			t.Fatalf("per address %d", o.maxClientsPerAddress)
		}
	})
	t.Run("smtp-server options that mean something here are read", func(t *testing.T) {
		o, w, err := parseOptions(map[string]any{
			"secure": true, "name": "mx.example.org", "maxClients": 7.0, "socketTimeout": 5000.0,
			"disabledCommands": []any{"AUTH", "STARTTLS"},
		})
		if err != nil || len(w) != 0 {
			t.Fatalf("%v %v", w, err)
		}
		if !o.secure || o.startTLS || o.name != "mx.example.org" || o.maxClients != 7 || o.socketTimeout != 5*time.Second {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("hideSTARTTLS stops offering STARTTLS", func(t *testing.T) {
		o, _, _ := parseOptions(map[string]any{"hideSTARTTLS": true})
		if o.startTLS {
			t.Fatal("STARTTLS still offered")
		}
	})
	t.Run("size and unsupported options are reported and ignored", func(t *testing.T) {
		_, w, err := parseOptions(map[string]any{"size": 5e6, "authOptional": true, "useProxy": true, "disabledCommands": []any{"HELO"}})
		if err != nil || len(w) != 4 {
			t.Fatalf("warnings %q, err %v", w, err)
		}
		for _, want := range []string{"options.size", "options.authOptional", "options.useProxy", "HELO"} {
			if !strings.Contains(strings.Join(w, "\n"), want) {
				t.Errorf("no warning names %s: %q", want, w)
			}
		}
	})
	t.Run("options of the wrong type are errors naming the key", func(t *testing.T) {
		_, _, err := parseOptions(map[string]any{"secure": "yes", "maxClients": 0.0, "socketTimeout": "1m", "key": "k",
			"maxClientsPerAddress": 1.5, "idleTimeout": 10.0, "maxSessionTime": false})
		for _, want := range []string{"options.secure", "options.maxClients", "options.socketTimeout", "key and cert must be given together",
			"options.maxClientsPerAddress", "options.idleTimeout", "options.maxSessionTime"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v does not name %s", err, want)
			}
		}
	})
}

func TestKeepNewestBoundsStoredMessages(t *testing.T) {
	big := strings.Repeat("x", MaxStoredBounceBytes/3)
	msgs := []notify.BounceMessage{{Message: big + "4"}, {Message: big + "3"}, {Message: big + "2"}, {Message: big + "1"}}
	kept := keepNewest(msgs)
	if len(kept) != 2 || kept[0].Message != msgs[0].Message {
		t.Fatalf("kept %d messages", len(kept))
	}
	huge := []notify.BounceMessage{{Message: strings.Repeat("x", MaxStoredBounceBytes+1)}, {Message: "older"}}
	if kept := keepNewest(huge); len(kept) != 1 {
		t.Fatalf("the newest message alone is kept whatever its size; kept %d", len(kept))
	}
}
