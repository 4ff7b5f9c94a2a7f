// /etc/govkit/notify/src/config.local.js: notify's settings on one machine
// behind a reverse proxy on the same machine. No secret here: those come
// from /etc/govkit/notify.env as process.env.
const env = process.env;
module.exports = {
  // Loopback only: the reverse proxy is the way in. (Inbound SMTP listens
  // on this host too: see email.inboundSmtpServer below.)
  host: '127.0.0.1',
  port: 3000,
  // The public URL of confirmation and unsubscribe links.
  httpHost: 'https://notify.example.org',
  // By default 127.0.0.1 is both an admin address (super admin, no
  // sign-in) and a trusted SiteMinder proxy. Behind a proxy on this
  // machine every request comes from 127.0.0.1, so those defaults would
  // make every visitor super admin. Nobody gets ambient authority here:
  // administrators sign in (the first is made with `govkit notify admin
  // add`), and the proxy is trusted only to say who the client is, in
  // X-Forwarded-For, which it must set.
  adminIps: [],
  siteMinderReverseProxyIps: [],
  trustedReverseProxyIps: ['127.0.0.1'],
  // One machine: the queue in process. With several machines, a Redis:
  //   queue: { connection: { host: 'redis.internal', port: 6379, password: env.REDIS_PASSWORD } },
  queue: { connection: null },
  email: {
    // Production refuses to start without an SMTP server of its own.
    smtp: {
      host: 'smtp.example.org',
      port: 587,
      secure: false,
      auth: { user: 'notify@example.org', pass: env.SMTP_PASSWORD },
    },
    // Bounce and unsubscribe mail to bn-…/un-…@notify.example.org: point
    // the domain's MX at a mail server that relays it to 127.0.0.1:2525
    // (or set host above to '0.0.0.0' and firewall port 3000).
    inboundSmtpServer: { listeningSmtpPort: 2525, domain: 'notify.example.org' },
  },
};
