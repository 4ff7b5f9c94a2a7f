package notify

// Subscription states and channels.
const (
	StateUnconfirmed = "unconfirmed"
	StateConfirmed   = "confirmed"
	StateDeleted     = "deleted"

	ChannelEmail = "email"
	ChannelSMS   = "sms"
	ChannelInApp = "inApp"
)

// Subscription is a user's subscription to a service on one channel
// (collection "subscription").
type Subscription struct {
	Meta
	ServiceName   string
	Channel       string // email (default) or sms
	UserChannelID string // email address or phone number
	State         string // unconfirmed (default), confirmed, deleted
	// ConfirmationRequest is free-form in the original: confirmationCodeRegex,
	// confirmationCodeEncrypted, confirmationCode, sendRequest, from,
	// subject, textBody, htmlBody, merged over config.
	ConfirmationRequest Fields
	UserID              string
	// BroadcastPushNotificationFilter is a JMESPath filter expression
	// evaluated against a broadcast notification's data.
	BroadcastPushNotificationFilter string
	Data                            any // any Fields value
	UnsubscriptionCode              string
	// UnsubscribedAdditionalServices is written when an unsubscribe also
	// covers other services, so that undo can restore them.
	UnsubscribedAdditionalServices *UnsubscribedServices
	Extra                          Fields
}

// UnsubscribedServices records the other subscriptions an unsubscribe with
// additionalServices deleted.
type UnsubscribedServices struct {
	Names []string
	IDs   []string
}

// ApplyDefaults sets channel email and state unconfirmed when unset.
func (s *Subscription) ApplyDefaults() {
	if s.Channel == "" {
		s.Channel = ChannelEmail
	}
	if s.State == "" {
		s.State = StateUnconfirmed
	}
}

// Fields returns the stored form.
func (s *Subscription) Fields() Fields {
	e := &encoder{}
	s.encodeHead(e)
	e.str("serviceName", s.ServiceName)
	e.str("channel", s.Channel)
	e.str("userChannelId", s.UserChannelID)
	e.str("state", s.State)
	if s.ConfirmationRequest != nil {
		e.put("confirmationRequest", s.ConfirmationRequest)
	}
	e.str("userId", s.UserID)
	e.str("broadcastPushNotificationFilter", s.BroadcastPushNotificationFilter)
	e.any("data", s.Data)
	e.str("unsubscriptionCode", s.UnsubscriptionCode)
	if u := s.UnsubscribedAdditionalServices; u != nil {
		doc := Fields{}
		if u.Names != nil {
			doc = append(doc, Field{"names", stringsValue(u.Names)})
		}
		if u.IDs != nil {
			doc = append(doc, Field{"ids", stringsValue(u.IDs)})
		}
		e.put("unsubscribedAdditionalServices", doc)
	}
	s.encodeTail(e)
	e.extra(s.Extra)
	return e.f
}

func stringsValue(v []string) []any {
	arr := make([]any, len(v))
	for i, s := range v {
		arr[i] = s
	}
	return arr
}

// SetFields reads client input.
func (s *Subscription) SetFields(f Fields) error { return s.decode(f, true) }

// LoadFields reads stored data.
func (s *Subscription) LoadFields(f Fields) { _ = s.decode(f, false) }

func (s *Subscription) decode(f Fields, strict bool) error {
	*s = Subscription{}
	d := newDecoder(strict, true, &s.Extra)
	for _, e := range f {
		if s.Meta.decode(d, e) {
			continue
		}
		switch e.Key {
		case "serviceName":
			d.str(e, &s.ServiceName)
		case "channel":
			d.str(e, &s.Channel)
		case "userChannelId":
			d.str(e, &s.UserChannelID)
		case "state":
			d.str(e, &s.State)
		case "confirmationRequest":
			d.doc(e, &s.ConfirmationRequest)
		case "userId":
			d.str(e, &s.UserID)
		case "broadcastPushNotificationFilter":
			d.str(e, &s.BroadcastPushNotificationFilter)
		case "data":
			s.Data = e.Value
		case "unsubscriptionCode":
			d.str(e, &s.UnsubscriptionCode)
		case "unsubscribedAdditionalServices":
			s.decodeUnsubscribed(d, e)
		default:
			d.unknown(e)
		}
	}
	return d.err()
}

func (s *Subscription) decodeUnsubscribed(d *decoder, e Field) {
	if d.null(e) {
		return
	}
	doc, ok := e.Value.(Fields)
	if !ok {
		d.mismatch(e, "must be {names, ids}")
		return
	}
	var u UnsubscribedServices
	sub := &decoder{strict: true}
	for _, f := range doc {
		switch f.Key {
		case "names":
			sub.strings(f, &u.Names)
		case "ids":
			sub.strings(f, &u.IDs)
		default:
			sub.errs = append(sub.errs, &FieldError{f.Key, "unknown"})
		}
	}
	if sub.err() != nil {
		d.mismatch(e, "must be {names: [string], ids: [string]}")
		return
	}
	s.UnsubscribedAdditionalServices = &u
}

// MarshalJSON writes the API form.
func (s Subscription) MarshalJSON() ([]byte, error) { return s.Fields().MarshalJSON() }

// UnmarshalJSON reads client input strictly.
func (s *Subscription) UnmarshalJSON(b []byte) error { return decodeJSON(b, s) }
