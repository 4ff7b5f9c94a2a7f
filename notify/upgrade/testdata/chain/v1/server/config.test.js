module.exports = {
  adminIps: [],
};
