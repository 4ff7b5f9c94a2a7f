package config

// failedRecipientRegex is the original's default for
// email.bounce.failedRecipientRegex (an RFC 5322 address pattern).
const failedRecipientRegex = `(?:[a-z0-9!#$%&'*+/=?^_` + "`" + `{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_` + "`" + `{|}~-]+)*|"(?:[\x01-\x08\x0b\x0c\x0e-\x1f\x21\x23-\x5b\x5d-\x7f]|\\[\x01-\x09\x0b\x0c\x0e-\x7f])*")@(?:(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?|\[(?:(?:(2(5[0-5]|[0-4][0-9])|1[0-9][0-9]|[1-9]?[0-9]))\.){3}(?:(2(5[0-5]|[0-4][0-9])|1[0-9][0-9]|[1-9]?[0-9])|[a-z0-9-]*[a-z0-9]:(?:[\x01-\x08\x0b\x0c\x0e-\x1f\x21-\x5a\x53-\x7f]|\\[\x01-\x09\x0b\x0c\x0e-\x7f])+)\])`

// Defaults returns the built-in configuration: the values of NotifyBC
// 6.4.1's src/config.ts, every key and message template, as a fresh tree the
// caller may modify. TLS material is not part of it; Load adds the
// certificates found in the deployment's server/certs as the original does.
func Defaults() map[string]any {
	return map[string]any{
		"restApiRoot":               "/api",
		"host":                      "0.0.0.0",
		"port":                      3000.0,
		"adminIps":                  []any{"127.0.0.1"},
		"siteMinderReverseProxyIps": []any{"127.0.0.1"},
		"email": map[string]any{
			"inboundSmtpServer": map[string]any{
				"enabled": true,
			},
			"bounce": map[string]any{
				"enabled":              true,
				"unsubThreshold":       5.0,
				"subjectRegex":         "",
				"smtpStatusCodeRegex":  `5\.\d{1,3}\.\d{1,3}`,
				"failedRecipientRegex": failedRecipientRegex,
			},
			"listUnsubscribeByEmail": map[string]any{
				"enabled": true,
			},
			"throttle": map[string]any{
				"enabled":  false,
				"max":      4.0,
				"duration": 1000.0,
			},
		},
		"sms": map[string]any{
			"provider": "twilio",
			"providerSettings": map[string]any{
				"swift": map[string]any{
					"apiUrlPrefix": "https://secure.smsgateway.ca/services/message.svc/",
				},
				"vonage": map[string]any{},
			},
			"throttle": map[string]any{
				"enabled":  true,
				"max":      4.0,
				"duration": 1000.0,
			},
		},
		"subscription": map[string]any{
			"detectDuplicatedSubscription": false,
			"duplicatedSubscriptionNotification": map[string]any{
				"sms": map[string]any{
					"textBody": "A duplicated subscription was submitted and rejected. You will continue receiving notifications. If the request was not created by you, pls ignore this msg.",
				},
				"email": map[string]any{
					"from":     "no_reply@invalid.local",
					"subject":  "Duplicated Subscription",
					"textBody": "A duplicated subscription was submitted and rejected. You will continue receiving notifications. If the request was not created by you, please ignore this message.",
				},
			},
			"confirmationRequest": map[string]any{
				"sms": map[string]any{
					"confirmationCodeRegex": `\d{5}`,
					"sendRequest":           true,
					"textBody":              "Enter {confirmation_code} on screen",
				},
				"email": map[string]any{
					"confirmationCodeRegex": `\d{5}`,
					"sendRequest":           true,
					"from":                  "no_reply@invalid.local",
					"subject":               "Subscription confirmation",
					"textBody":              "Enter {subscription_confirmation_code} on screen",
				},
			},
			"confirmationAcknowledgements": map[string]any{
				"successMessage": "You have been subscribed.",
				"failureMessage": "Error happened while confirming subscription.",
			},
			"anonymousUnsubscription": map[string]any{
				"code": map[string]any{
					"required": true,
					"regex":    `\d{5}`,
				},
				"acknowledgements": map[string]any{
					"onScreen": map[string]any{
						"successMessage": "You have been un-subscribed.",
						"failureMessage": "Error happened while un-subscribing.",
					},
					"notification": map[string]any{
						"email": map[string]any{
							"from":     "no_reply@invalid.local",
							"subject":  "Un-subscription acknowledgement",
							"textBody": "This is to acknowledge you have been un-subscribed from receiving notification for {unsubscription_service_names}. If you did not authorize this change or if you changed your mind, open {unsubscription_reversion_url} to revert.",
							"htmlBody": `This is to acknowledge you have been un-subscribed from receiving notification for {unsubscription_service_names}. If you did not authorize this change or if you changed your mind, click <a href="{unsubscription_reversion_url}">here</a> to revert.`,
						},
					},
				},
			},
			"anonymousUndoUnsubscription": map[string]any{
				"successMessage": "You have been re-subscribed.",
				"failureMessage": "Error happened while re-subscribing.",
			},
		},
		"notification": map[string]any{
			"broadcastSubscriberChunkSize":              1000.0,
			"guaranteedBroadcastPushDispatchProcessing": true,
			"logSkippedBroadcastPushDispatches":         false,
		},
		"cron": map[string]any{
			"purgeData": map[string]any{
				"timeSpec":                              "0 0 1 * * *",
				"pushNotificationRetentionDays":         30.0,
				"expiredInAppNotificationRetentionDays": 30.0,
				"nonConfirmedSubscriptionRetentionDays": 30.0,
				"deletedBounceRetentionDays":            30.0,
				"expiredAccessTokenRetentionDays":       30.0,
				"defaultRetentionDays":                  30.0,
			},
			"dispatchLiveNotifications": map[string]any{
				"timeSpec": "0 * * * * *",
			},
			"checkRssConfigUpdates": map[string]any{
				"timeSpec": "0 * * * * *",
			},
			"deleteBounces": map[string]any{
				"timeSpec": "0 0 * * * *",
				"minLapsedHoursSinceLatestNotificationEnded": 1.0,
			},
			"reDispatchBroadcastPushNotifications": map[string]any{
				"timeSpec": "0 */2 * * * *",
			},
			"clearRedisDatastore": map[string]any{
				"timeSpec": "0 0 * * * *",
			},
		},
		"tls": map[string]any{},
		"queue": map[string]any{
			"connection": map[string]any{
				"host": "127.0.0.1",
				"port": 6379.0,
			},
		},
		"loggingLevels": []any{"fatal", "error", "warn", "log"},
	}
}

// DefaultMiddleware returns the built-in middleware configuration: the
// original's src/middleware.ts.
func DefaultMiddleware() map[string]any {
	return map[string]any{
		"all": map[string]any{
			"compression": map[string]any{},
		},
		"apiOnly": map[string]any{
			"helmet": map[string]any{},
			"morgan": map[string]any{
				"params": []any{
					`:remote-addr - :remote-user [:date[clf]] ":method :url HTTP/:http-version" :status ":req[X-Forwarded-For]"`,
				},
				"enabled": false,
			},
		},
	}
}

// DefaultDatasource returns the built-in datasource configuration: empty,
// which means the embedded document store. (The original's default names
// the directory of its in-memory MongoDB; ours keeps the embedded store in
// the data directory, which is not a config file matter.)
func DefaultDatasource() map[string]any {
	return map[string]any{}
}
