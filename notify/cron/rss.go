package cron

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/cron/timespec"
	"github.com/govkit/govkit/notify/feed"
	"github.com/govkit/govkit/notify/mailmerge"
	"github.com/govkit/govkit/notify/mongostore"
)

// ConfigNotification is the name of the per-service configuration records
// that may hold an RSS feed (value.rss).
const ConfigNotification = "notification"

// feedTask is an RSS schedule this node keeps: the configuration's updated
// time it was made from, so that an edited configuration restarts it.
type feedTask struct {
	updated time.Time
	// scheduled is false for a configuration whose settings cannot run;
	// it is remembered so that the problem is logged once per version.
	scheduled bool
}

// RssConfig is value.rss of a notification configuration, with the
// original's defaults, plus what the notifications it makes need.
type RssConfig struct {
	ID          string
	ServiceName string
	URL         string
	TimeSpec    *timespec.Spec
	// ItemKeyField identifies an item (default guid).
	ItemKeyField string
	// IncludeUpdatedItems: an item whose key is known but one of
	// FieldsToCheckForUpdate (default pubDate) changed is notified again.
	IncludeUpdatedItems    bool
	FieldsToCheckForUpdate []string
	// OutdatedItemRetentionGenerations: how many polls an item that left
	// the feed is remembered (default 1), so that one coming back within
	// them is not notified again.
	OutdatedItemRetentionGenerations float64
	// MessageTemplates are the messages by channel.
	MessageTemplates notify.Fields
	HTTPHost         string
}

// ReadRssConfig reads a notification configuration's RSS settings. The
// error is a *notify.FieldError naming the field (value.rss.timeSpec, …).
func ReadRssConfig(c *notify.Configuration) (*RssConfig, error) {
	v, _ := c.Value.(notify.Fields)
	r, _ := fieldOf(v, "rss").(notify.Fields)
	if r == nil {
		return nil, &notify.FieldError{Field: "value.rss", Rule: "must be an object"}
	}
	rc := &RssConfig{ID: c.ID.Hex(), ServiceName: c.ServiceName, ItemKeyField: "guid",
		FieldsToCheckForUpdate: []string{"pubDate"}, OutdatedItemRetentionGenerations: 1}
	rc.URL, _ = fieldOf(r, "url").(string)
	u, err := url.Parse(rc.URL)
	if err != nil || rc.URL == "" {
		return nil, &notify.FieldError{Field: "value.rss.url", Rule: "must be an http or https URL"}
	}
	if err := feed.CheckURL(u); err != nil {
		return nil, &notify.FieldError{Field: "value.rss.url", Rule: "must be an http or https URL"}
	}
	ts, _ := fieldOf(r, "timeSpec").(string)
	if rc.TimeSpec, err = timespec.Parse(ts); err != nil {
		return nil, &notify.FieldError{Field: "value.rss.timeSpec", Rule: err.Error()}
	}
	if k, _ := fieldOf(r, "itemKeyField").(string); k != "" {
		rc.ItemKeyField = k
	}
	rc.IncludeUpdatedItems = truthy(fieldOf(r, "includeUpdatedItems"))
	if arr, ok := fieldOf(r, "fieldsToCheckForUpdate").([]any); ok && len(arr) > 0 {
		rc.FieldsToCheckForUpdate = nil
		for _, f := range arr {
			if s, ok := f.(string); ok {
				rc.FieldsToCheckForUpdate = append(rc.FieldsToCheckForUpdate, s)
			}
		}
	}
	if g, ok := number(fieldOf(r, "outdatedItemRetentionGenerations")); ok {
		rc.OutdatedItemRetentionGenerations = g
	}
	rc.MessageTemplates, _ = fieldOf(v, "messageTemplates").(notify.Fields)
	rc.HTTPHost, _ = fieldOf(v, "httpHost").(string)
	return rc, nil
}

// CheckRssConfigUpdates keeps this node's RSS schedules in step with the
// notification configurations that have value.rss: it starts one for a
// new configuration (at value.rss.timeSpec), restarts one whose
// configuration changed and stops one whose configuration is gone. The
// polls themselves take the per-run lock, so that with two primaries
// each feed is polled once per time.
func (s *Service) CheckRssConfigUpdates(ctx context.Context) error {
	configs, err := s.o.Store.Configurations().Find(ctx, mongostore.Query{
		Filter: doc("name", ConfigNotification, "value.rss", doc("$ne", nil)),
	})
	if err != nil {
		return err
	}
	byID := make(map[string]*notify.Configuration, len(configs))
	for _, c := range configs {
		byID[c.ID.Hex()] = c
	}
	s.feedsMu.Lock()
	defer s.feedsMu.Unlock()
	for id, t := range s.feeds {
		if c := byID[id]; c == nil || !c.Updated.Equal(t.updated) {
			s.sched.remove("rss:" + id)
			delete(s.feeds, id)
		}
	}
	for id, c := range byID {
		if _, ok := s.feeds[id]; ok {
			continue
		}
		rc, err := ReadRssConfig(c)
		if err != nil {
			s.log.Error("cron: RSS feed not scheduled", "configuration", id, "serviceName", c.ServiceName, "err", err)
			s.feeds[id] = feedTask{updated: c.Updated}
			continue
		}
		s.sched.add("rss:"+id, rc.TimeSpec, true, func(ctx context.Context) error {
			c, err := s.o.Store.Configurations().FindByID(ctx, id)
			if errors.Is(err, notify.ErrNotFound) {
				return nil // deleted; the next check stops the schedule
			}
			if err != nil {
				return err
			}
			_, err = s.PollFeed(ctx, c)
			return err
		})
		s.feeds[id] = feedTask{updated: c.Updated, scheduled: true}
		s.log.Info("cron: RSS feed scheduled", "configuration", id, "serviceName", c.ServiceName, "timeSpec", rc.TimeSpec.String())
	}
	return nil
}

// PollFeed polls the feed of one notification configuration, as the
// original's RSS task does:
//
//   - It fetches the feed and compares its items with those the rss
//     record of the service kept from the last poll, by ItemKeyField. An
//     item is new when no kept item has its key; with IncludeUpdatedItems
//     it is also notified again when a FieldsToCheckForUpdate field that
//     both versions have differs. The first poll of a feed finds nothing
//     kept, so every item in the feed is notified, as in the original.
//   - It keeps the feed's items, stamped _notifyBCLastPoll, plus the
//     items that left the feed fewer than OutdatedItemRetentionGenerations
//     polls ago, and sets lastPoll. Of each item it keeps only what the
//     next poll compares (keptFields), where the original keeps it whole.
//   - For each new or updated item and each channel of the message
//     templates, it creates and dispatches an asynchronous broadcast
//     {serviceName, channel, isBroadcast: true, message: template, data:
//     item, httpHost, asyncBroadcastPushNotification: true}.
//
// The rss record is written before anything is sent, on the condition
// that no other poll wrote it since it was read: of two overlapping
// polls, only one notifies. It returns how many notifications it created.
func (s *Service) PollFeed(ctx context.Context, c *notify.Configuration) (int, error) {
	rc, err := ReadRssConfig(c)
	if err != nil {
		return 0, err
	}
	items, err := s.o.Feeds.Fetch(ctx, rc.URL)
	if err != nil {
		return 0, fmt.Errorf("rss %s (%s): %w", rc.ServiceName, hostOf(rc.URL), err)
	}
	ts := s.now()
	coll := s.o.Store.Rss()
	rec, err := coll.FindOne(ctx, mongostore.Query{Filter: doc("serviceName", rc.ServiceName)})
	if errors.Is(err, notify.ErrNotFound) {
		rec = &notify.Rss{ServiceName: rc.ServiceName, Items: []notify.Fields{}}
		rec.CreatedBy, rec.UpdatedBy = &User, &User
		err = coll.Insert(ctx, rec)
	}
	if err != nil {
		return 0, err
	}
	for i := range items {
		items[i].Set("_notifyBCLastPoll", ts)
	}
	fresh := changedItems(rc, items, rec.Items)
	kept := append(keptFields(rc, items), retainedItems(rc, items, rec.Items, rec.LastPoll, ts)...)
	stored := make([]any, len(kept))
	for i, it := range kept {
		stored[i] = it
	}
	// Of two polls that read the same state, one writes the new one.
	key := "rss/" + rec.ID.Hex() + "/" + strconv.FormatInt(rec.LastPoll.UnixMilli(), 10)
	if rec.LastPoll.IsZero() {
		key = "rss/" + rec.ID.Hex() + "/first"
	}
	won, err := s.o.Store.Claim(ctx, key)
	if err != nil {
		return 0, err
	}
	if !won {
		s.log.Info("cron: RSS poll superseded by another", "serviceName", rc.ServiceName)
		return 0, nil
	}
	err = coll.UpdateByID(ctx, rec.ID.Hex(), doc("$set", doc("items", stored, "lastPoll", ts, "updatedBy", User.Fields())))
	if err != nil {
		_ = s.o.Store.Unclaim(context.WithoutCancel(ctx), key)
		return 0, err
	}
	count := 0
	var errs []error
	for _, it := range fresh {
		data := plainData(it)
		for _, t := range rc.MessageTemplates {
			if err := s.notifyItem(ctx, rc, t.Key, t.Value, data); err != nil {
				errs = append(errs, err)
				continue
			}
			count++
		}
	}
	s.log.Info("cron: RSS feed polled", "serviceName", rc.ServiceName, "items", len(items), "newOrUpdated", len(fresh), "notifications", count)
	return count, errors.Join(errs...)
}

func (s *Service) notifyItem(ctx context.Context, rc *RssConfig, channel string, template any, data any) error {
	switch channel {
	case notify.ChannelEmail, notify.ChannelSMS, notify.ChannelInApp:
	default:
		return fmt.Errorf("rss %s: messageTemplates.%s: channel must be email, sms or inApp", rc.ServiceName, channel)
	}
	msg, ok := template.(notify.Fields)
	if !ok {
		return fmt.Errorf("rss %s: messageTemplates.%s must be an object", rc.ServiceName, channel)
	}
	n := &notify.Notification{
		ServiceName:                    rc.ServiceName,
		Channel:                        channel,
		IsBroadcast:                    true,
		Message:                        msg.Clone(),
		Data:                           data,
		HTTPHost:                       rc.HTTPHost,
		AsyncBroadcastPushNotification: true,
	}
	n.CreatedBy, n.UpdatedBy = &User, &User
	n.ApplyDefaults()
	if _, err := s.o.Dispatcher.Check(ctx, n); err != nil {
		return fmt.Errorf("rss %s: %w", rc.ServiceName, err)
	}
	if err := s.o.Store.Notifications().Insert(ctx, n); err != nil {
		return fmt.Errorf("rss %s: %w", rc.ServiceName, err)
	}
	if _, err := s.o.Dispatcher.Dispatch(ctx, n, nil, s.request(n)); err != nil {
		return fmt.Errorf("rss %s: notification %s: %w", rc.ServiceName, n.ID.Hex(), err)
	}
	return nil
}

// keptFields are items as the rss record keeps them: the fields the next
// poll compares (ItemKeyField, FieldsToCheckForUpdate) and
// _notifyBCLastPoll. The original keeps whole items, so a feed at the byte
// cap made a record of 10 MB, read and written again at every poll.
func keptFields(rc *RssConfig, items []notify.Fields) []notify.Fields {
	out := make([]notify.Fields, len(items))
	for i, it := range items {
		k := notify.Fields{}
		for _, name := range append([]string{rc.ItemKeyField, "_notifyBCLastPoll"}, rc.FieldsToCheckForUpdate...) {
			if v, ok := it.Get(name); ok && !k.Has(name) {
				k = append(k, notify.Field{Key: name, Value: v})
			}
		}
		out[i] = k
	}
	return out
}

// changedItems are the feed's items that no kept item matches (lodash's
// differenceWith, as in the original).
func changedItems(rc *RssConfig, items, kept []notify.Fields) []notify.Fields {
	var out []notify.Fields
	for _, cur := range items {
		same := false
		for _, old := range kept {
			if sameItem(rc, cur, old) {
				same = true
				break
			}
		}
		if !same {
			out = append(out, cur)
		}
	}
	return out
}

func sameItem(rc *RssConfig, cur, old notify.Fields) bool {
	if !sameKey(fieldOf(cur, rc.ItemKeyField), fieldOf(old, rc.ItemKeyField)) {
		return false
	}
	if !rc.IncludeUpdatedItems {
		return true
	}
	for _, f := range rc.FieldsToCheckForUpdate {
		a, b := fieldOf(cur, f), fieldOf(old, f)
		if truthy(a) && truthy(b) && jsString(a) != jsString(b) {
			return false
		}
	}
	return true
}

// retainedItems are the kept items that left the feed and are younger
// than OutdatedItemRetentionGenerations polls; an age is counted in polls
// of the last interval, rounded, as the original does. When the feed is
// empty every kept item stays (the original never compares then).
func retainedItems(rc *RssConfig, items, kept []notify.Fields, lastPoll, ts time.Time) []notify.Fields {
	if len(items) == 0 {
		return kept
	}
	interval := float64(ts.UnixMilli())
	if !lastPoll.IsZero() {
		interval = float64(ts.Sub(lastPoll).Milliseconds())
	}
	var out []notify.Fields
	for _, old := range kept {
		if polled, ok := fieldOf(old, "_notifyBCLastPoll").(time.Time); ok {
			age := float64(ts.Sub(polled).Milliseconds())
			if math.Floor(age/interval+0.5) >= rc.OutdatedItemRetentionGenerations {
				continue
			}
		}
		inFeed := false
		for _, cur := range items {
			if sameKey(fieldOf(old, rc.ItemKeyField), fieldOf(cur, rc.ItemKeyField)) {
				inFeed = true
				break
			}
		}
		if !inFeed {
			out = append(out, old)
		}
	}
	return out
}

// sameKey compares item keys by value and type, as JavaScript's === does
// for strings and numbers (two missing keys are equal, as null === null);
// dates compare by instant.
func sameKey(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	fa, aNum := number(a)
	fb, bNum := number(b)
	if aNum || bNum {
		return aNum && bNum && fa == fb
	}
	ta, aTime := a.(time.Time)
	tb, bTime := b.(time.Time)
	if aTime || bTime {
		return aTime && bTime && ta.Equal(tb)
	}
	sa, aStr := a.(string)
	sb, bStr := b.(string)
	if aStr && bStr {
		return sa == sb
	}
	ba, aBool := a.(bool)
	bb, bBool := b.(bool)
	return aBool && bBool && ba == bb
}

// jsString is a value as JavaScript's toString writes it, for comparing
// versions of a field; dates are compared by instant.
func jsString(v any) string {
	if f, ok := number(v); ok {
		return mailmerge.FormatNumber(f)
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = jsString(e)
		}
		return strings.Join(parts, ",")
	}
	return "[object Object]"
}

// truthy is JavaScript's truthiness of a stored value.
func truthy(v any) bool {
	if f, ok := number(v); ok {
		return f != 0 && !math.IsNaN(f)
	}
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	}
	return true
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func fieldOf(f notify.Fields, key string) any {
	v, _ := f.Get(key)
	return v
}

// plainData is an item as the original's notification data holds it after
// its JSON round trip: dates as ISO 8601 strings.
func plainData(v any) any {
	switch x := v.(type) {
	case notify.Fields:
		out := make(notify.Fields, len(x))
		for i, e := range x {
			out[i] = notify.Field{Key: e.Key, Value: plainData(e.Value)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainData(e)
		}
		return out
	case time.Time:
		return notify.FormatTime(x)
	}
	return v
}

// hostOf names a feed in logs without its path and query, which may carry
// a key.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Scheme + "://" + u.Host
	}
	return "(bad url)"
}
