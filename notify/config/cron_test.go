package config_test

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCronTimeSpecsAndRetentionsAreCheckedAtStart(t *testing.T) {
	cases := []struct {
		name string
		json string
		path string
		says string
	}{
		{"a time spec that cannot be read", `{"cron": {"purgeData": {"timeSpec": "0 0 25 * * *"}}}`, "cron.purgeData.timeSpec", "hour field"},
		{"a time spec with too few fields", `{"cron": {"dispatchLiveNotifications": {"timeSpec": "* * *"}}}`, "cron.dispatchLiveNotifications.timeSpec", "it has 3"},
		{"a time spec that never fires", `{"cron": {"deleteBounces": {"timeSpec": "0 0 0 30 2 *"}}}`, "cron.deleteBounces.timeSpec", "never fires"},
		{"a time spec set to null", `{"cron": {"reDispatchBroadcastPushNotifications": {"timeSpec": null}}}`, "cron.reDispatchBroadcastPushNotifications.timeSpec", "missing"},
		{"a time spec of the wrong type", `{"cron": {"checkRssConfigUpdates": {"timeSpec": 5}}}`, "cron.checkRssConfigUpdates.timeSpec", "it has 1"},
		{"a negative retention", `{"cron": {"purgeData": {"pushNotificationRetentionDays": -1}}}`, "cron.purgeData.pushNotificationRetentionDays", "negative"},
		{"a negative waiting time", `{"cron": {"deleteBounces": {"minLapsedHoursSinceLatestNotificationEnded": -2}}}`, "cron.deleteBounces.minLapsedHoursSinceLatestNotificationEnded", "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := deployment(t, map[string]string{"src/config.local.json": tc.json})
			_, err := load(t, root, "", nil)
			ps := problems(t, err)
			if len(ps) == 0 || ps[0].Path != tc.path || filepath.Base(ps[0].File) != "config.local.json" || !strings.Contains(ps[0].Message, tc.says) {
				t.Fatalf("problems = %v, want one at %s in config.local.json saying %q", ps, tc.path, tc.says)
			}
		})
	}
}

func TestCronSettingsAsTheOriginalReadsThem(t *testing.T) {
	root := deployment(t, map[string]string{"src/config.local.json": `{"cron": {
		"purgeData": {"timeSpec": "0 30 2 * * *", "defaultRetentionDays": 7, "pushNotificationRetentionDays": 2},
		"deleteBounces": {"minLapsedHoursSinceLatestNotificationEnded": 1.5},
		"dispatchLiveNotifications": {"timeSpec": "*/10 * * * *"}}}`})
	c := mustLoad(t, root, "", nil)
	pd := c.Cron.PurgeData
	if pd.TimeSpec != "0 30 2 * * *" || pd.PushNotificationRetentionDays != 2 || pd.DefaultRetentionDays != 7 {
		t.Errorf("purgeData = %+v", pd)
	}
	// A retention left out falls back to defaultRetentionDays — but the
	// built-in defaults set every one to 30, so only those a file sets
	// to null fall back; here they keep the defaults' 30.
	if pd.ExpiredInAppNotificationRetentionDays != 30 {
		t.Errorf("expiredInAppNotificationRetentionDays = %v", pd.ExpiredInAppNotificationRetentionDays)
	}
	if c.Cron.DeleteBounces.MinLapsedHoursSinceLatestNotificationEnded != 1.5 || c.Cron.DeleteBounces.TimeSpec != "0 0 * * * *" {
		t.Errorf("deleteBounces = %+v", c.Cron.DeleteBounces)
	}
	if c.Cron.DispatchLiveNotifications.TimeSpec != "*/10 * * * *" || c.Cron.ReDispatchBroadcastPushNotifications.TimeSpec != "0 */2 * * * *" {
		t.Errorf("cron = %+v", c.Cron)
	}
	root = deployment(t, map[string]string{"src/config.local.json": `{"cron": {"purgeData": {"defaultRetentionDays": 3, "deletedBounceRetentionDays": null}}}`})
	if got := mustLoad(t, root, "", nil).Cron.PurgeData.DeletedBounceRetentionDays; got != 3 {
		t.Errorf("a retention set to null falls back to defaultRetentionDays: got %v", got)
	}
}
