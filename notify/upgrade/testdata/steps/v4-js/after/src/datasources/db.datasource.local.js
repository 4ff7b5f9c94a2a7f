// Connection to the deployment's MongoDB.
module.exports = {
  uri: `mongodb://${process.env.DATABASE_SERVICE_NAME || 'localhost'}:${process.env.DB_PORT || '27017'}/notify-bc`,
  user: process.env.MONGODB_USER,
  pass: process.env.MONGODB_PASSWORD,
  authSource: 'admin',
};
