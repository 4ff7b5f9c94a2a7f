const redis = {
  host: process.env.REDIS_HOST || '127.0.0.1',
  port: 6379,
};

module.exports = {
  email: {
    smtp: {host: 'smtp.example.gov', pool: true},
    throttle: {
      enabled: true,
      id: 'notifyBCEmail',
      // four per second
      minTime: 250,
      maxConcurrent: 1,
      jobExpiration: 120000,
      datastore: 'ioredis',
      clientOptions: redis,
    },
  },
  sms: {
    provider: 'twilio',
    throttle: {
      enabled: true,
      minTime: 300,
      datastore: 'ioredis',
      clientOptions: redis,
    },
  },
  notification: {
    broadcastSubscriberChunkSize: 1000,
    broadcastSubRequestBatchSize: 10,
    broadcastCustomFilterFunctions: {
      contains_ci: {
        _func: async function (resolvedArgs) {
          return resolvedArgs[0].toLowerCase().includes(resolvedArgs[1].toLowerCase());
        },
        _signature: [{types: [2]}, {types: [2]}],
      },
    },
  },
};
