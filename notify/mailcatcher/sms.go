package mailcatcher

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/sms"
)

// SMS is one caught text message.
type SMS struct {
	ID       int64     `json:"id"`
	Received time.Time `json:"received"`
	To       string    `json:"to"`
	Text     string    `json:"text"`
	// SubscriptionID is the subscription the message was sent for, if any.
	SubscriptionID string `json:"subscriptionId,omitempty"`
}

// maxSMSText bounds what is kept of one text message; providers split
// anything longer than a few segments anyway.
const maxSMSText = 16 << 10

// SMSSender returns the SMS sender of `govkit dev`: it sends nothing,
// catches the message for the page and logs its destination and length.
func (c *Catcher) SMSSender() sms.Sender { return smsSender{c} }

type smsSender struct{ c *Catcher }

func (s smsSender) Send(ctx context.Context, m sms.Message) error {
	if err := notify.SendStarting(ctx); err != nil {
		return err
	}
	text := m.Text
	if len(text) > maxSMSText {
		text = text[:maxSMSText]
		for !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
	}
	c := s.c
	c.mu.Lock()
	c.nextSMSID++
	msg := SMS{ID: c.nextSMSID, Received: time.Now().UTC(), To: m.To, Text: text, SubscriptionID: m.SubscriptionID}
	c.keepSMS(msg)
	c.saveSMS(msg)
	c.mu.Unlock()
	c.opts.Logger.InfoContext(ctx, "sms caught (not sent)", "to", m.To, "chars", utf8.RuneCountInString(m.Text), "subscriptionId", m.SubscriptionID)
	return nil
}

// keepSMS appends s and drops the oldest text messages beyond
// MaxMessages; callers hold c.mu.
func (c *Catcher) keepSMS(s SMS) {
	c.texts = append(c.texts, s)
	if drop := len(c.texts) - c.opts.MaxMessages; drop > 0 {
		for _, d := range c.texts[:drop] {
			c.forget(smsFile(d.ID))
		}
		c.texts = append([]SMS(nil), c.texts[drop:]...)
	}
}

// Texts returns the caught text messages, newest first.
func (c *Catcher) Texts() []SMS {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]SMS, 0, len(c.texts))
	for i := len(c.texts) - 1; i >= 0; i-- {
		out = append(out, c.texts[i])
	}
	return out
}
