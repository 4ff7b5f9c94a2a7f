package notify

import "time"

// Bounce states.
const (
	BounceActive  = "active"
	BounceDeleted = StateDeleted
)

// Bounce counts the hard bounces of one address (collection "bounce").
type Bounce struct {
	Meta
	Channel         string
	UserChannelID   string
	HardBounceCount int64  // default 0
	State           string // active (default) or deleted
	// BounceMessages are newest first.
	BounceMessages []BounceMessage
	// LatestNotificationStarted defaults to null and is always shown.
	LatestNotificationStarted *time.Time
	LatestNotificationEnded   *time.Time
	Extra                     Fields
}

// BounceMessage is one received bounce.
type BounceMessage struct {
	Date    time.Time
	Message string
}

// ApplyDefaults sets state active when unset.
func (b *Bounce) ApplyDefaults() {
	if b.State == "" {
		b.State = BounceActive
	}
}

// Fields returns the stored form.
func (b *Bounce) Fields() Fields {
	e := &encoder{}
	b.encodeHead(e)
	e.str("channel", b.Channel)
	e.str("userChannelId", b.UserChannelID)
	e.put("hardBounceCount", b.HardBounceCount)
	e.str("state", b.State)
	if b.BounceMessages != nil {
		arr := make([]any, len(b.BounceMessages))
		for i, m := range b.BounceMessages {
			arr[i] = Fields{{"date", m.Date.UTC()}, {"message", m.Message}}
		}
		e.put("bounceMessages", arr)
	}
	if b.LatestNotificationStarted != nil {
		e.put("latestNotificationStarted", b.LatestNotificationStarted.UTC())
	} else {
		e.put("latestNotificationStarted", nil)
	}
	if b.LatestNotificationEnded != nil {
		e.put("latestNotificationEnded", b.LatestNotificationEnded.UTC())
	}
	b.encodeTail(e)
	e.extra(b.Extra)
	return e.f
}

// SetFields reads client input.
func (b *Bounce) SetFields(f Fields) error { return b.decode(f, true) }

// LoadFields reads stored data.
func (b *Bounce) LoadFields(f Fields) { _ = b.decode(f, false) }

func (b *Bounce) decode(f Fields, strict bool) error {
	*b = Bounce{}
	d := newDecoder(strict, true, &b.Extra)
	for _, e := range f {
		if b.Meta.decode(d, e) {
			continue
		}
		switch e.Key {
		case "channel":
			d.str(e, &b.Channel)
		case "userChannelId":
			d.str(e, &b.UserChannelID)
		case "hardBounceCount":
			d.integer(e, &b.HardBounceCount)
		case "state":
			d.str(e, &b.State)
		case "bounceMessages":
			b.decodeMessages(d, e)
		case "latestNotificationStarted":
			if e.Value == nil {
				continue // the default; Fields writes it back as null
			}
			d.optTime(e, &b.LatestNotificationStarted)
		case "latestNotificationEnded":
			d.optTime(e, &b.LatestNotificationEnded)
		default:
			d.unknown(e)
		}
	}
	return d.err()
}

func (b *Bounce) decodeMessages(d *decoder, e Field) {
	if d.null(e) {
		return
	}
	arr, ok := e.Value.([]any)
	if !ok {
		d.mismatch(e, "must be an array of {date, message}")
		return
	}
	msgs := make([]BounceMessage, 0, len(arr))
	for _, v := range arr {
		item, ok := v.(Fields)
		if !ok {
			d.mismatch(e, "must be an array of {date, message}")
			return
		}
		var m BounceMessage
		sub := &decoder{strict: true}
		for _, x := range item {
			switch x.Key {
			case "date":
				sub.time(x, &m.Date)
			case "message":
				sub.str(x, &m.Message)
			}
		}
		if sub.err() != nil {
			d.mismatch(e, "must be an array of {date, message}")
			return
		}
		msgs = append(msgs, m)
	}
	b.BounceMessages = msgs
}

// MarshalJSON writes the API form.
func (b Bounce) MarshalJSON() ([]byte, error) { return b.Fields().MarshalJSON() }

// UnmarshalJSON reads client input strictly.
func (b *Bounce) UnmarshalJSON(data []byte) error { return decodeJSON(data, b) }

// Rss is the last poll of a service's RSS feed (collection "rss", internal).
type Rss struct {
	Meta
	ServiceName string
	// Items are feed items as parsed, each with _notifyBCLastPoll (a date)
	// and usually pubDate.
	Items    []Fields
	LastPoll time.Time
	Extra    Fields
}

// ApplyDefaults does nothing: rss has no defaults beyond Meta.
func (r *Rss) ApplyDefaults() {}

// Fields returns the stored form.
func (r *Rss) Fields() Fields {
	e := &encoder{}
	r.encodeHead(e)
	e.str("serviceName", r.ServiceName)
	if r.Items != nil {
		arr := make([]any, len(r.Items))
		for i, it := range r.Items {
			arr[i] = it
		}
		e.put("items", arr)
	}
	e.time("lastPoll", r.LastPoll)
	r.encodeTail(e)
	e.extra(r.Extra)
	return e.f
}

// SetFields reads client input.
func (r *Rss) SetFields(f Fields) error { return r.decode(f, true) }

// LoadFields reads stored data.
func (r *Rss) LoadFields(f Fields) { _ = r.decode(f, false) }

func (r *Rss) decode(f Fields, strict bool) error {
	*r = Rss{}
	d := newDecoder(strict, true, &r.Extra)
	for _, e := range f {
		if r.Meta.decode(d, e) {
			continue
		}
		switch e.Key {
		case "serviceName":
			d.str(e, &r.ServiceName)
		case "items":
			arr, ok := e.Value.([]any)
			if !ok {
				d.mismatch(e, "must be an array of objects")
				continue
			}
			items := make([]Fields, 0, len(arr))
			for _, v := range arr {
				it, ok := v.(Fields)
				if !ok {
					items = nil
					break
				}
				items = append(items, it)
			}
			if items == nil {
				d.mismatch(e, "must be an array of objects")
				continue
			}
			r.Items = items
		case "lastPoll":
			d.time(e, &r.LastPoll)
		default:
			d.unknown(e)
		}
	}
	return d.err()
}

// MarshalJSON writes the API form.
func (r Rss) MarshalJSON() ([]byte, error) { return r.Fields().MarshalJSON() }

// UnmarshalJSON reads client input strictly.
func (r *Rss) UnmarshalJSON(b []byte) error { return decodeJSON(b, r) }
