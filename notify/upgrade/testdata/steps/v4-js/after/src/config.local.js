module.exports = {
  sms: {
    provider: 'swift',
    providerSettings: {swift: {accountKey: process.env.SWIFT_KEY}},
  },
};
