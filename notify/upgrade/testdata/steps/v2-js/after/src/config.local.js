module.exports = {
  notification: {
    // keep a record of every successful dispatch
    guaranteedBroadcastPushDispatchProcessing: true,
    broadcastSubscriberChunkSize: 500,
  },
  oidc: {
    discoveryUrl: process.env.OIDC_DISCOVERY_URL,
    isAdmin(user) {
      return user.roles && user.roles.includes('admin');
    },
  },
};
