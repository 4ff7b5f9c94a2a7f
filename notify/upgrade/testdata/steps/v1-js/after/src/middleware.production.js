module.exports = {
  // applies to the web console too
  all: {
    compression: {},
  },
  apiOnly: {
    morgan: {
      enabled: false, // too noisy
    },
  },
};
