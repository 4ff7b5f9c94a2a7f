// the route's host name in production
const host = process.env.NOTIFY_HTTP_HOST;

module.exports = {
  // the platform assigns the listening address (loopback-boot read PORT
  // and HOST on its own; saying it here keeps it after the upgrade)
  host: process.env.HOST || '0.0.0.0',
  port: process.env.PORT || 3000,
  httpHost: host,
  smtp: {
    host: 'smtp.prod.example.gov',
  },
};
