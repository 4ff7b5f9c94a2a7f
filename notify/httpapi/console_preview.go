package httpapi

import (
	"errors"
	"net/http"

	"github.com/govkit/govkit/notify"
)

func init() { routeGroups = append(routeGroups, (*Server).consolePreviewRoutes) }

func (s *Server) consolePreviewRoutes() {
	if s.store == nil || s.disp == nil {
		return
	}
	s.handle(route{method: "POST", path: "/console/preview", roles: adminsOnly, tag: "console",
		summary: "the message a notification would send to one subscriber, mail-merged as the sender merges it; nothing is sent or stored",
		body:    "ConsolePreviewRequest", response: "ConsolePreview", h: s.consolePreview})
}

// ConsolePreview is a merged message. Email has every field; sms has
// textBody only.
type ConsolePreview struct {
	Channel  string `json:"channel"`
	To       string `json:"to"`
	From     string `json:"from,omitempty"`
	Subject  string `json:"subject,omitempty"`
	TextBody string `json:"textBody"`
	HTMLBody string `json:"htmlBody,omitempty"`
}

// consolePreview merges a notification as POST /notifications would take
// it (nothing is stored) for the subscriber subscriptionId names. The
// subscription must be of the notification's service and channel: a
// preview shows what a broadcast or a unicast of that service sends, not
// another service's data under this one's template. The route is for
// administrators, who may read every subscription anyway; the broadcast
// filters are not applied (a preview shows the message, not whether the
// subscriber is chosen).
func (s *Server) consolePreview(w http.ResponseWriter, r *http.Request) {
	body, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	for _, k := range body.Keys() {
		if k != "notification" && k != "subscriptionId" {
			writeError(w, r, httpError(http.StatusBadRequest, k+" is not a field of a preview request (notification, subscriptionId)"))
			return
		}
	}
	nf, ok := body.Get("notification")
	if !ok {
		writeError(w, r, httpError(http.StatusBadRequest, "notification is required"))
		return
	}
	fields, ok := nf.(notify.Fields)
	if !ok {
		writeError(w, r, httpError(http.StatusBadRequest, "notification must be an object"))
		return
	}
	id, ok := body.String("subscriptionId")
	if !ok || id == "" {
		writeError(w, r, httpError(http.StatusBadRequest, "subscriptionId is required (a string)"))
		return
	}
	n := &notify.Notification{}
	if err := n.SetFields(fields.Clone()); err != nil {
		var fe *notify.FieldError
		if errors.As(err, &fe) {
			err = httpError(http.StatusBadRequest, "notification."+fe.Error())
		}
		writeError(w, r, err)
		return
	}
	if err := validNotification(n); err != nil {
		writeError(w, r, httpError(http.StatusBadRequest, "notification."+err.Error()))
		return
	}
	n.ApplyDefaults()
	if n.Channel != notify.ChannelEmail && n.Channel != notify.ChannelSMS {
		writeError(w, r, httpError(http.StatusBadRequest, "notification.channel must be email or sms: in-app notifications are not merged"))
		return
	}
	sub, err := s.store.Subscriptions().FindByID(r.Context(), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if sub.ServiceName != n.ServiceName || sub.Channel != n.Channel {
		writeError(w, r, httpError(http.StatusBadRequest, "subscriptionId: the subscription is not of the notification's serviceName and channel"))
		return
	}
	m, err := s.disp.Preview(n, sub, s.linkHost(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := ConsolePreview{Channel: m.Channel, To: m.To, TextBody: m.Text}
	if m.Channel == notify.ChannelEmail {
		out.From, out.Subject, out.HTMLBody = m.From, m.Subject, m.HTML
	}
	writeJSON(w, http.StatusOK, out)
}
