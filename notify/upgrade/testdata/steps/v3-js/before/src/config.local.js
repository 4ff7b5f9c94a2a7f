// Local settings: written by the operations team.
module.exports = {
  httpHost: 'https://notify.example.gov',
  adminIps: ['127.0.0.1', '10.1.0.0/16'],
  smtp: {
    host: 'smtp.local.example.gov',
    port: 25,
    pool: true,
  },
  smsServiceProvider: 'twilio',
  sms: {
    twilio: {
      accountSid: process.env.TWILIO_SID,
      authToken: process.env.TWILIO_TOKEN,
      fromNumber: '12345678900',
    },
  },
  notification: {
    handleBounce: true,
    guaranteedBroadcastPushDispatchProcessing: true,
  },
  oidc: {
    discoveryUrl: 'https://sso.example.gov/.well-known/openid-configuration',
    isAdmin: function (payload) {
      return payload.groups.indexOf('notify-admins') >= 0;
    },
  },
};
