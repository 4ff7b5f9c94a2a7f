module.exports = {
  name: 'db',
  connector: 'mongodb',
  url: process.env.MONGODB_URL,
};
