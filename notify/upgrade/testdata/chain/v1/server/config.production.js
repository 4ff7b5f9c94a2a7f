module.exports = {
  // the route's host name in production
  httpHost: process.env.NOTIFY_HTTP_HOST,
  smtp: {
    host: 'smtp.prod.example.gov',
  },
};
