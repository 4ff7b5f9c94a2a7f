package config

// Subscription is config key subscription, which a service's
// configuration{name:'subscription'} document may override: merge the
// document's value over Raw()["subscription"] with Merge and decode the
// result with DecodeSubscription.
type Subscription struct {
	DetectDuplicatedSubscription bool
	// DuplicatedSubscriptionNotification is the message sent instead of a
	// confirmation request to a duplicate, by channel (email, sms).
	DuplicatedSubscriptionNotification map[string]*MessageTemplate
	// ConfirmationRequest is the confirmation request template by channel.
	ConfirmationRequest          map[string]*ConfirmationRequest
	ConfirmationAcknowledgements Acknowledgements
	AnonymousUnsubscription      AnonymousUnsubscription
	AnonymousUndoUnsubscription  Acknowledgements
}

// MessageTemplate is a message of the given channel; SMS uses TextBody only.
type MessageTemplate struct {
	From     string
	Subject  string
	TextBody string
	HTMLBody string
}

// ConfirmationRequest is a confirmation request template.
type ConfirmationRequest struct {
	ConfirmationCodeRegex string
	SendRequest           bool
	MessageTemplate
}

// Acknowledgements are the on-screen answers of verify, unsubscribe and
// undo; a RedirectURL replaces them with a redirect.
type Acknowledgements struct {
	SuccessMessage string
	FailureMessage string
	RedirectURL    string
}

// AnonymousUnsubscription is subscription.anonymousUnsubscription.
type AnonymousUnsubscription struct {
	Code struct {
		Required bool
		Regex    string
	}
	Acknowledgements struct {
		OnScreen Acknowledgements
		// Notification is the acknowledgement message by channel; a nil
		// map (notification: null) or a nil entry disables it.
		Notification map[string]*MessageTemplate
	}
}

// DecodeSubscription reads a subscription config tree (the static one, or a
// merge of a service's document over it). Problems name the key path under
// subscription.
func DecodeSubscription(m map[string]any) (Subscription, []Problem) {
	r := &reader{tree: map[string]any{"subscription": m}}
	s := r.subscription("subscription")
	return s, r.problems
}

func (r *reader) subscription(base string) Subscription {
	var s Subscription
	s.DetectDuplicatedSubscription = r.boolean(base + ".detectDuplicatedSubscription")
	s.DuplicatedSubscriptionNotification = r.templates(base + ".duplicatedSubscriptionNotification")
	if m := r.object(base + ".confirmationRequest"); m != nil {
		s.ConfirmationRequest = map[string]*ConfirmationRequest{}
		for _, ch := range sortedKeys(m) {
			p := base + ".confirmationRequest." + ch
			if r.object(p) == nil {
				s.ConfirmationRequest[ch] = nil
				continue
			}
			s.ConfirmationRequest[ch] = &ConfirmationRequest{
				ConfirmationCodeRegex: r.str(p + ".confirmationCodeRegex"),
				SendRequest:           r.boolean(p + ".sendRequest"),
				MessageTemplate:       r.template(p),
			}
		}
	}
	s.ConfirmationAcknowledgements = r.acks(base + ".confirmationAcknowledgements")
	s.AnonymousUnsubscription.Code.Required = r.boolean(base + ".anonymousUnsubscription.code.required")
	s.AnonymousUnsubscription.Code.Regex = r.str(base + ".anonymousUnsubscription.code.regex")
	s.AnonymousUnsubscription.Acknowledgements.OnScreen = r.acks(base + ".anonymousUnsubscription.acknowledgements.onScreen")
	s.AnonymousUnsubscription.Acknowledgements.Notification = r.templates(base + ".anonymousUnsubscription.acknowledgements.notification")
	s.AnonymousUndoUnsubscription = r.acks(base + ".anonymousUndoUnsubscription")
	return s
}

func (r *reader) template(p string) MessageTemplate {
	return MessageTemplate{
		From:     r.str(p + ".from"),
		Subject:  r.str(p + ".subject"),
		TextBody: r.str(p + ".textBody"),
		HTMLBody: r.str(p + ".htmlBody"),
	}
}

func (r *reader) templates(p string) map[string]*MessageTemplate {
	m := r.object(p)
	if m == nil {
		return nil
	}
	out := map[string]*MessageTemplate{}
	for _, ch := range sortedKeys(m) {
		if r.object(p+"."+ch) == nil {
			out[ch] = nil
			continue
		}
		t := r.template(p + "." + ch)
		out[ch] = &t
	}
	return out
}

func (r *reader) acks(p string) Acknowledgements {
	return Acknowledgements{
		SuccessMessage: r.str(p + ".successMessage"),
		FailureMessage: r.str(p + ".failureMessage"),
		RedirectURL:    r.str(p + ".redirectUrl"),
	}
}
