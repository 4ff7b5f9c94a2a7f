module.exports = {adminIps: []};
