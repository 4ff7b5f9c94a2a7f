module.exports = {
  uri: 'mongodb://127.0.0.1:27017/notifyBC?replicaSet=rs0',
  user: process.env.MONGODB_USER,
  pass: process.env.MONGODB_PASSWORD,
};
