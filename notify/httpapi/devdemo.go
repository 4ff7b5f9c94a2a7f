package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DevDemoService is the service the demo subscriptions of `govkit dev`
// belong to.
const DevDemoService = "demo-road-closures"

// devDemoMarker records in the data directory that the demo was seeded.
const devDemoMarker = "notify-demo-seeded"

// DevDemo is what `govkit dev` seeded in the notification service on the
// first start of a data directory: a few confirmed subscriptions to
// DevDemoService, two by email and one by SMS, so that a broadcast has
// somebody to reach and lands in the caught mail (and SMS) at once.
//
// They are made through the service's own HTTP API, as an administrator
// would make them (POST /subscriptions with state "confirmed"), so the
// demo keeps working whatever the store and the queue look like inside.
// A marker file in the data directory makes it happen once: a second start
// seeds nothing, even after the demo subscriptions were deleted, and a
// data directory that already holds subscriptions is not seeded at all.
type DevDemo struct {
	Service       string
	Subscriptions []DevDemoSubscription
}

// DevDemoSubscription is one seeded subscription.
type DevDemoSubscription struct {
	ID            string `json:"id"`
	Channel       string `json:"channel"`
	UserChannelID string `json:"userChannelId"`
	// UserID is whose it is: the id the API gives the person signed in
	// with OIDC at govkit dev's provider (their email), so that alice and
	// bob each see their own in the console.
	UserID string `json:"userId,omitempty"`
}

var devDemoSubscriptions = []DevDemoSubscription{
	{Channel: "email", UserChannelID: "alice@govkit.test", UserID: "alice@govkit.test"},
	{Channel: "email", UserChannelID: "bob@govkit.test", UserID: "bob@govkit.test"},
	{Channel: "sms", UserChannelID: "+12505550101"},
}

func (d *DevDemo) summary() string {
	var parts []string
	for _, s := range d.Subscriptions {
		parts = append(parts, s.Channel+" "+s.UserChannelID)
	}
	return strings.Join(parts, ", ")
}

// seedDevDemo seeds the demo through the API at apiURL (the service's
// restApiRoot, reached from the loopback address, which is super admin).
// When it seeds nothing it says why.
func seedDevDemo(ctx context.Context, apiURL, dataDir string) (*DevDemo, string, error) {
	marker := filepath.Join(dataDir, devDemoMarker)
	if _, err := os.Stat(marker); err == nil {
		return nil, fmt.Sprintf("%q, seeded at the first start of %s, not again", DevDemoService, dataDir), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}
	client := &http.Client{Timeout: 30 * time.Second}
	call := func(method, path string, body, out any) error {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, apiURL+path, rd)
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
		}
		return json.Unmarshal(b, out)
	}
	var count struct{ Count int64 }
	if err := call("GET", "/subscriptions/count", nil, &count); err != nil {
		return nil, "", err
	}
	if count.Count > 0 {
		return nil, "not seeded: the store already had subscriptions", os.WriteFile(marker, []byte("not seeded: the store already had subscriptions\n"), 0o600)
	}
	demo := &DevDemo{Service: DevDemoService}
	for _, s := range devDemoSubscriptions {
		var made DevDemoSubscription
		rec := map[string]any{"serviceName": DevDemoService, "channel": s.Channel, "userChannelId": s.UserChannelID, "state": "confirmed"}
		if s.UserID != "" {
			rec["userId"] = s.UserID
		}
		err := call("POST", "/subscriptions", rec, &made)
		if err != nil {
			return nil, "", err
		}
		demo.Subscriptions = append(demo.Subscriptions, made)
	}
	return demo, "", os.WriteFile(marker, []byte("seeded "+time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600)
}
