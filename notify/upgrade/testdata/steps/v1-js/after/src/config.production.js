// Production settings of the notification service.
const domain = process.env.MAIL_DOMAIN || 'example.gov';

module.exports = {
  httpHost: process.env.HTTP_HOST,
  inboundSmtpServer: {
    listeningSmtpPort: 2525,
    options: {
      secure: true, // TLS on the inbound port
    },
  },
  subscription: {
    unsubscriptionEmailDomain: domain,
  },
  notification: {
    broadcastCustomFilterFunctions: {
      /* lower-cases a string */
      lower: {
        _func: async function (resolvedArgs) {
          return resolvedArgs[0].toLowerCase();
        },
        _signature: [{types: [2]}],
      },
    },
  },
};
