// The embedded store in the state directory, unless MONGODB_URI (in
// /etc/govkit/notify.env) names a MongoDB replica set.
module.exports = process.env.MONGODB_URI ? { uri: process.env.MONGODB_URI } : {};
