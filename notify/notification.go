package notify

import "time"

// Notification states. In-app notifications also use read and deleted
// (StateDeleted).
const (
	StateNew     = "new"
	StateSending = "sending"
	StateSent    = "sent"
	StateError   = "error"
	StateRead    = "read"
)

// Notification is a message to one subscriber (unicast) or to every
// confirmed subscriber of a service and channel (broadcast) (collection
// "notification").
type Notification struct {
	Meta
	ServiceName   string
	State         string // new (default), sending, sent, error; inApp also read, deleted
	UserChannelID string
	UserID        string
	// Message is free-form: email from, subject, textBody, htmlBody; sms
	// textBody; anything for inApp. Defaults to {}.
	Message                           Fields
	Channel                           string // inApp (default), email, sms
	IsBroadcast                       bool
	SkipSubscriptionConfirmationCheck bool
	ValidTill                         time.Time
	InvalidBefore                     time.Time
	Data                              any // any Fields value
	// AsyncBroadcastPushNotification is false/true or a callback URL.
	AsyncBroadcastPushNotification any
	// BroadcastPushNotificationSubscriptionFilter is a JMESPath filter
	// expression evaluated against each subscription's data.
	BroadcastPushNotificationSubscriptionFilter string
	HTTPHost                                    string
	// ReadBy and DeletedBy hold the user ids that marked an in-app
	// broadcast read or deleted.
	ReadBy    []string
	DeletedBy []string
	// Dispatch is the state of a broadcast; nil when the document has none.
	Dispatch *Dispatch
	Extra    Fields
}

// Dispatch is the progress of a broadcast as the API shows it under
// "dispatch". Stores assemble it from the side collection of
// [DispatchResult]s and from the arrays older documents hold inline.
type Dispatch struct {
	Candidates []string
	Successful []string
	Failed     []DispatchFailure
	Skipped    []string
	// Counts are the full counts (ours); the lists may be cut short for
	// very large broadcasts. Computed for the API, never stored: a
	// client's counts are dropped.
	Counts *DispatchCounts
	// Extra keeps other keys, such as the original's temporary "req".
	Extra Fields
}

// DispatchFailure is one entry of dispatch.failed.
type DispatchFailure struct {
	SubscriptionID string
	UserChannelID  string
	Error          any // a message, or whatever the sender reported
	Extra          Fields
}

// DispatchOutcome is what happened to one subscriber of a broadcast.
type DispatchOutcome string

// Outcomes, as the API names the lists of dispatch.
const (
	DispatchSuccessful DispatchOutcome = "successful"
	DispatchFailed     DispatchOutcome = "failed"
	DispatchSkipped    DispatchOutcome = "skipped"
)

// DispatchResult is one subscriber's result of a broadcast, kept outside the
// notification document (see notify/mongostore), at most one per
// notification and subscription.
type DispatchResult struct {
	SubscriptionID string
	UserChannelID  string
	Outcome        DispatchOutcome
	Error          any // for DispatchFailed: a message or a Fields value
}

// DispatchCounts counts a broadcast's recorded candidates, results by
// outcome, and the candidates still waiting for a result.
type DispatchCounts struct {
	Candidates int64 `json:"candidates"`
	Pending    int64 `json:"pending"`
	Successful int64 `json:"successful"`
	Failed     int64 `json:"failed"`
	Skipped    int64 `json:"skipped"`
}

// ApplyDefaults sets state new, channel inApp and message {} when unset.
func (n *Notification) ApplyDefaults() {
	if n.State == "" {
		n.State = StateNew
	}
	if n.Channel == "" {
		n.Channel = ChannelInApp
	}
	if n.Message == nil {
		n.Message = Fields{}
	}
}

// Fields returns the stored form.
func (n *Notification) Fields() Fields {
	e := &encoder{}
	n.encodeHead(e)
	e.str("serviceName", n.ServiceName)
	e.str("state", n.State)
	e.str("userChannelId", n.UserChannelID)
	e.str("userId", n.UserID)
	if n.Message != nil {
		e.put("message", n.Message)
	}
	e.str("channel", n.Channel)
	e.put("isBroadcast", n.IsBroadcast)
	e.put("skipSubscriptionConfirmationCheck", n.SkipSubscriptionConfirmationCheck)
	e.time("validTill", n.ValidTill)
	e.time("invalidBefore", n.InvalidBefore)
	e.any("data", n.Data)
	e.any("asyncBroadcastPushNotification", n.AsyncBroadcastPushNotification)
	e.str("broadcastPushNotificationSubscriptionFilter", n.BroadcastPushNotificationSubscriptionFilter)
	e.str("httpHost", n.HTTPHost)
	e.strings("readBy", n.ReadBy)
	e.strings("deletedBy", n.DeletedBy)
	if n.Dispatch != nil {
		e.put("dispatch", n.Dispatch.Fields())
	}
	n.encodeTail(e)
	e.extra(n.Extra)
	return e.f
}

// Fields returns the stored (and API) form of dispatch.
func (d *Dispatch) Fields() Fields {
	e := &encoder{}
	e.strings("candidates", d.Candidates)
	e.strings("successful", d.Successful)
	if d.Failed != nil {
		arr := make([]any, len(d.Failed))
		for i, f := range d.Failed {
			item := Fields{{"subscriptionId", f.SubscriptionID}}
			if f.UserChannelID != "" {
				item = append(item, Field{"userChannelId", f.UserChannelID})
			}
			if f.Error != nil {
				item = append(item, Field{"error", f.Error})
			}
			known := item[:len(item):len(item)]
			for _, x := range f.Extra {
				if !known.Has(x.Key) {
					item = append(item, x)
				}
			}
			arr[i] = item
		}
		e.put("failed", arr)
	}
	e.strings("skipped", d.Skipped)
	if c := d.Counts; c != nil {
		e.put("counts", Fields{{"candidates", c.Candidates}, {"successful", c.Successful}, {"failed", c.Failed}, {"skipped", c.Skipped}, {"pending", c.Pending}})
	}
	e.extra(d.Extra)
	return e.f
}

// SetFields reads client input.
func (n *Notification) SetFields(f Fields) error { return n.decode(f, true) }

// LoadFields reads stored data.
func (n *Notification) LoadFields(f Fields) { _ = n.decode(f, false) }

func (n *Notification) decode(f Fields, strict bool) error {
	*n = Notification{}
	d := newDecoder(strict, true, &n.Extra)
	for _, e := range f {
		if n.Meta.decode(d, e) {
			continue
		}
		switch e.Key {
		case "serviceName":
			d.str(e, &n.ServiceName)
		case "state":
			d.str(e, &n.State)
		case "userChannelId":
			d.str(e, &n.UserChannelID)
		case "userId":
			d.str(e, &n.UserID)
		case "message":
			d.doc(e, &n.Message)
		case "channel":
			d.str(e, &n.Channel)
		case "isBroadcast":
			d.boolean(e, &n.IsBroadcast)
		case "skipSubscriptionConfirmationCheck":
			d.boolean(e, &n.SkipSubscriptionConfirmationCheck)
		case "validTill":
			d.time(e, &n.ValidTill)
		case "invalidBefore":
			d.time(e, &n.InvalidBefore)
		case "data":
			n.Data = e.Value
		case "asyncBroadcastPushNotification":
			switch e.Value.(type) {
			case bool, string, nil:
				n.AsyncBroadcastPushNotification = e.Value
			default:
				d.mismatch(e, "must be a boolean or a callback URL")
			}
		case "broadcastPushNotificationSubscriptionFilter":
			d.str(e, &n.BroadcastPushNotificationSubscriptionFilter)
		case "httpHost":
			d.str(e, &n.HTTPHost)
		case "readBy":
			d.strings(e, &n.ReadBy)
		case "deletedBy":
			d.strings(e, &n.DeletedBy)
		case "dispatch":
			n.decodeDispatch(d, e)
		default:
			d.unknown(e)
		}
	}
	return d.err()
}

func (n *Notification) decodeDispatch(d *decoder, e Field) {
	if d.null(e) {
		return
	}
	doc, ok := e.Value.(Fields)
	if !ok {
		d.mismatch(e, "must be an object")
		return
	}
	var dp Dispatch
	sub := newDecoder(true, true, &dp.Extra)
	for _, f := range doc {
		switch f.Key {
		case "candidates":
			sub.strings(f, &dp.Candidates)
		case "successful":
			sub.strings(f, &dp.Successful)
		case "skipped":
			sub.strings(f, &dp.Skipped)
		case "counts":
			// computed for the API; never stored
		case "failed":
			arr, ok := f.Value.([]any)
			if !ok {
				sub.errs = append(sub.errs, &FieldError{"dispatch.failed", "must be an array"})
				continue
			}
			dp.Failed = make([]DispatchFailure, 0, len(arr))
			for _, v := range arr {
				item, ok := v.(Fields)
				if !ok {
					sub.errs = append(sub.errs, &FieldError{"dispatch.failed", "must be an array of objects"})
					break
				}
				var df DispatchFailure
				for _, x := range item {
					switch x.Key {
					case "subscriptionId":
						switch id := x.Value.(type) {
						case string:
							df.SubscriptionID = id
						case ID:
							df.SubscriptionID = id.Hex()
						default:
							df.Extra = append(df.Extra, x)
						}
					case "userChannelId":
						if s, ok := x.Value.(string); ok {
							df.UserChannelID = s
						} else {
							df.Extra = append(df.Extra, x)
						}
					case "error":
						df.Error = x.Value
					default:
						df.Extra = append(df.Extra, x)
					}
				}
				dp.Failed = append(dp.Failed, df)
			}
		default:
			sub.unknown(f)
		}
	}
	if err := sub.err(); err != nil {
		d.mismatch(e, "must be {candidates, successful, failed, skipped}")
		return
	}
	n.Dispatch = &dp
}

// MarshalJSON writes the API form.
func (n Notification) MarshalJSON() ([]byte, error) { return n.Fields().MarshalJSON() }

// UnmarshalJSON reads client input strictly.
func (n *Notification) UnmarshalJSON(b []byte) error { return decodeJSON(b, n) }
