const redis = {
  host: process.env.REDIS_HOST || '127.0.0.1',
  port: 6379,
};

module.exports = {
  email: {
    smtp: {host: 'smtp.example.gov', pool: true},
    throttle: {
      enabled: true,
      // four per second
      max: 4,
      duration: 1000,
    },
  },
  sms: {
    provider: 'twilio',
    throttle: {
      enabled: true,
      max: 1,
      duration: 300,
    },
  },
  notification: {
    broadcastSubscriberChunkSize: 1000,
    broadcastCustomFilterFunctions: {
      contains_ci: {
        _func: async function (resolvedArgs) {
          return resolvedArgs[0].toLowerCase().includes(resolvedArgs[1].toLowerCase());
        },
        _signature: [{types: [2]}, {types: [2]}],
      },
    },
  },
  queue: {
    connection: redis,
  },
};
