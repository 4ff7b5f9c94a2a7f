// Local settings: written by the operations team.

// The production mail domain, shared by several settings.
const mailDomain = 'notify.example.gov';

module.exports = {
  // production overrides the local host name
  httpHost: process.env.NOTIFY_HTTP_HOST ?? 'https://notify.example.gov',
  adminIps: ['10.2.0.0/16'],
  sms: {
    provider: 'twilio',
    providerSettings: {
      twilio: {
        accountSid: process.env.TWILIO_SID,
        authToken: process.env.TWILIO_TOKEN,
        fromNumber: '12345678900',
      },
    },
  },
  notification: {
    guaranteedBroadcastPushDispatchProcessing: true,
    broadcastSubscriberChunkSize: 2000,
  },
  oidc: {
    discoveryUrl: 'https://sso.example.gov/.well-known/openid-configuration',
    isAdmin: function (payload) {
      return payload.groups.indexOf('notify-admins') >= 0;
    },
  },
  email: {
    smtp: {
      host: 'smtp.prod.example.gov',
      port: 25,
      pool: true,
      secure: true,
    },
    inboundSmtpServer: {
      domain: mailDomain,
      listeningSmtpPort: 2525,
    },
    bounce: {
      unsubThreshold: 3,
      subjectRegex: '^Undeliverable',
      enabled: true,
    },
    listUnsubscribeByEmail: {
      enabled: false,
    },
  },
};
