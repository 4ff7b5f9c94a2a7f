module.exports = {
  // applies to the web console too
  initial: {
    compression: {},
  },
  'routes:before': {
    morgan: {
      enabled: false, // too noisy
    },
  },
};
