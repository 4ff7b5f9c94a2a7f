package main

import (
	"context"
	"fmt"
	"io"

	"github.com/govkit/govkit/notify/httpapi"
)

// startNotifyDev starts the notification service for `govkit dev`: the
// embedded document store in the data dir, a mail catcher (mail and SMS)
// with its page at /mail/; it prints the URLs.
func startNotifyDev(ctx context.Context, o devOptions, w io.Writer) (devRunning, error) {
	var oidc *httpapi.DevOIDC
	if o.shared != nil {
		oidc = o.shared.consoleOIDC
	}
	d, err := httpapi.StartDev(ctx, httpapi.DevOptions{
		DataDir: o.dataDir, Host: o.host, Demo: !o.noDemo, OIDC: oidc,
		Listener: o.listeners["notify-port"], SMTPListener: o.listeners["smtp-port"], InboundSMTPListener: o.listeners["inbound-smtp-port"],
		Logger: o.logger("notify"), MailLogger: o.logger("mail"),
	}, w)
	if err != nil {
		return devRunning{}, err
	}
	try := []string{
		fmt.Sprintf("Open the notify web console %s/: from this machine you are super admin without signing in.\n"+
			"\"Sign in as someone else\" (top right) signs in with OIDC as alice or bob (each sees their demo subscription)\n"+
			"or as admin (Admin), with an administrator's password, or with an access token.", d.URL),
		fmt.Sprintf("Open the notify API explorer %s/api/explorer (requests from this machine are super admin).", d.URL),
		fmt.Sprintf("Send a broadcast to the demo subscribers, then read it in the caught mail %s:\n"+
			"curl -X POST %s/api/notifications -H 'Content-Type: application/json' \\\n"+
			"  -d '{\"serviceName\":\"%s\",\"channel\":\"email\",\"isBroadcast\":true,\"message\":{\"from\":\"roads@govkit.test\",\"subject\":\"Main Street closed\",\"textBody\":\"Main Street is closed today.\"}}'\n"+
			"(\"channel\":\"sms\" with {\"textBody\":…} reaches the SMS subscriber; caught SMS are on the same page.)",
			d.MailURL, d.URL, httpapi.DevDemoService),
	}
	return devRunning{stop: d.Stop, tryFirst: try}, nil
}
