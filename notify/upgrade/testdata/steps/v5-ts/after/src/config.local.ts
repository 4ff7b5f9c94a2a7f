// A TypeScript config without type annotations is JavaScript too.
module.exports = {
  sms: {
    throttle: {
      enabled: true,
      max: 2,
      duration: 1000,
    },
  },
};
