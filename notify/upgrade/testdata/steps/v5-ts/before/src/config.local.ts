// A TypeScript config without type annotations is JavaScript too.
module.exports = {
  sms: {
    throttle: {
      enabled: true,
      minTime: 500,
    },
  },
};
