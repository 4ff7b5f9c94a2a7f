package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/govkit/govkit/notify"
)

// callback POSTs the final notification, as JSON, to the URL an
// asynchronous broadcast named in asyncBroadcastPushNotification. Like the
// original it tries once and ignores the answer; a failure is logged with
// the host only (the URL may carry a token).
func (d *Dispatcher) callback(ctx context.Context, id notify.ID, target string) {
	host := "?"
	if u, err := url.Parse(target); err == nil {
		host = u.Host
	}
	n, err := d.reload(ctx, id)
	if err != nil {
		d.log.Error("notify: async callback not sent", "notification", id.Hex(), "host", host, "err", err)
		return
	}
	body, err := json.Marshal(n)
	if err != nil {
		d.log.Error("notify: async callback not sent", "notification", id.Hex(), "host", host, "err", err)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		d.log.Warn("notify: async callback URL unusable", "notification", id.Hex(), "host", host)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := d.o.HTTPClient.Do(req)
	if err != nil {
		d.log.Warn("notify: async callback failed", "notification", id.Hex(), "host", host, "err", errorText(err))
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	if res.StatusCode >= 300 {
		d.log.Warn("notify: async callback answered", "notification", id.Hex(), "host", host, "status", res.StatusCode)
	}
}

// errorText drops the URL from a client error, which may carry a token.
func errorText(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}
