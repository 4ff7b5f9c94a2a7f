// The production mail domain, shared by several settings.
const mailDomain = 'notify.example.gov';

module.exports = {
  // production overrides the local host name
  httpHost: process.env.NOTIFY_HTTP_HOST,
  adminIps: ['10.2.0.0/16'],
  smtp: {
    host: 'smtp.prod.example.gov',
    secure: true,
  },
  inboundSmtpServer: {
    domain: mailDomain,
    listeningSmtpPort: 2525,
    bounce: {
      unsubThreshold: 3,
      subjectRegex: '^Undeliverable',
    },
  },
  notification: {
    handleListUnsubscribeByEmail: false,
    broadcastSubscriberChunkSize: 2000,
  },
  subscription: {
    unsubscriptionEmailDomain: 'old.example.gov',
  },
};
