package mailcatcher_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/mailcatcher"
	"github.com/govkit/govkit/notify/sms"
)

// Caught mail and SMS kept in a directory are there after a restart,
// with their ids, and the bounds hold on disk too.
func TestKeptMailSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	c, snd, _ := start(t, mailcatcher.Options{Dir: dir, MaxMessages: 3})
	for i := 1; i <= 4; i++ {
		if err := snd.Send(context.Background(), email.Message{From: "a@example.org", To: "b@example.org", Subject: fmt.Sprintf("m%d", i), Text: "body " + fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SMSSender().Send(context.Background(), sms.Message{To: "+12505550101", Text: "Your code is 123456", SubscriptionID: "65a1"}); err != nil {
		t.Fatal(err)
	}
	before := c.Mails()

	again, err := mailcatcher.Open(mailcatcher.Options{Dir: dir, MaxMessages: 3, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	after := again.Mails()
	if len(after) != 3 || after[0].Subject != "m4" || after[2].Subject != "m2" {
		t.Fatalf("after a restart: %d mails, newest %q", len(after), after[0].Subject)
	}
	for i := range after {
		if after[i].ID != before[i].ID || after[i].Text != before[i].Text || !after[i].Received.Equal(before[i].Received) || string(after[i].Raw()) != string(before[i].Raw()) {
			t.Errorf("mail %d changed across the restart: %+v, was %+v", i, after[i], before[i])
		}
	}
	texts := again.Texts()
	if len(texts) != 1 || texts[0].Text != "Your code is 123456" || texts[0].To != "+12505550101" || texts[0].SubscriptionID != "65a1" {
		t.Errorf("SMS after a restart: %+v", texts)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "mail-*.json"))
	if len(files) != 3 {
		t.Errorf("%d mail files on disk, want the 3 kept", len(files))
	}

	// New messages continue the numbering.
	if err := again.SMSSender().Send(context.Background(), sms.Message{To: "+12505550102", Text: "second"}); err != nil {
		t.Fatal(err)
	}
	if got := again.Texts(); got[0].ID != texts[0].ID+1 {
		t.Errorf("ids %d then %d", texts[0].ID, got[0].ID)
	}
}

func TestAFileCutShortIsSkipped(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mail-000000000001.json"), []byte(`{"id":1,"raw":"U3Vi`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := mailcatcher.Open(mailcatcher.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Mails()) != 0 {
		t.Errorf("kept %d mails from a broken file", len(c.Mails()))
	}
}

// The page lists caught SMS beside the mail, escaped like the mail.
func TestPageShowsSMSBesideMail(t *testing.T) {
	c, snd, web := start(t, mailcatcher.Options{})
	if err := snd.Send(context.Background(), email.Message{From: "a@example.org", To: "b@example.org", Subject: "Road closed", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := c.SMSSender().Send(context.Background(), sms.Message{To: "+12505550101", Text: "Road <b>closed</b>"}); err != nil {
		t.Fatal(err)
	}
	_, page := get(t, web.URL+"/mail/")
	for _, want := range []string{"Road closed", "12505550101", "Road &lt;b&gt;closed&lt;/b&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	_, js := get(t, web.URL+"/mail/api/sms")
	if !strings.Contains(js, `"to": "+12505550101"`) {
		t.Errorf("api/sms: %s", js)
	}
}

// A caught SMS is logged with its destination and length, never its text
// (which may hold a confirmation code); the page is where the text is read.
func TestCaughtSMSLogLeavesTheTextOut(t *testing.T) {
	var buf bytes.Buffer
	c := mailcatcher.New(mailcatcher.Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err := c.SMSSender().Send(context.Background(), sms.Message{To: "+12505550100", Text: "Enter 48213 on screen", SubscriptionID: "65a1"}); err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log line %q: %v", buf.String(), err)
	}
	if rec["to"] != "+12505550100" || rec["chars"] != float64(21) || rec["subscriptionId"] != "65a1" {
		t.Errorf("log record = %v", rec)
	}
	if strings.Contains(buf.String(), "48213") {
		t.Errorf("the message text reached the log: %s", buf.String())
	}
	if got := c.Texts(); len(got) != 1 || got[0].Text != "Enter 48213 on screen" {
		t.Errorf("caught %+v", got)
	}
}
