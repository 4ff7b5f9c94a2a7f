module.exports = {
  all: {
    compression: {},
  },
  apiOnly: {
    morgan: {
      enabled: true,
    },
  },
};
