// Operator settings of a v1 deployment.
module.exports = {
  adminIps: ['127.0.0.1', '10.0.0.0/8'],
  // the OpenShift router in front of the service
  trustedReverseProxyIps: ['127.0.0.1'],
  httpHost: 'https://notify.example.gov',
  smtp: {
    host: 'smtp.example.gov',
    port: 25,
    pool: true,
  },
  smsServiceProvider: 'swift',
  sms: {
    swift: {
      accountKey: process.env.SWIFT_ACCOUNT_KEY,
      notifyBCSwiftKey: 'swift-shared-key',
    },
  },
  inboundSmtpServer: {
    domain: 'notify.example.gov',
    listeningSmtpPort: process.env.INBOUND_SMTP_PORT || 2525,
    bounce: {
      unsubThreshold: 3,
    },
  },
  notification: {
    handleBounce: true,
    handleListUnsubscribeByEmail: false,
    logSuccessfulBroadcastDispatches: true,
    broadcastSubscriberChunkSize: 500,
  },
  oidc: {
    discoveryUrl: 'https://sso.example.gov/auth/realms/gov/.well-known/openid-configuration',
    clientId: 'notify',
    isAdmin(user) {
      return user.roles.indexOf('admin') >= 0;
    },
  },
};
