// Connection to the deployment's MongoDB.
module.exports = {
  name: 'db',
  connector: 'mongodb',
  hostname: process.env.DATABASE_SERVICE_NAME || 'localhost',
  port: process.env.DB_PORT, // 27017 when unset
  user: process.env.MONGODB_USER,
  password: process.env.MONGODB_PASSWORD,
  database: 'notify-bc',
  authSource: 'admin',
};
