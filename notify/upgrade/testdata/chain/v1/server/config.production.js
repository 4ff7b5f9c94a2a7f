// the route's host name in production
const host = process.env.NOTIFY_HTTP_HOST;

module.exports = {
  httpHost: host,
  smtp: {
    host: 'smtp.prod.example.gov',
  },
};
