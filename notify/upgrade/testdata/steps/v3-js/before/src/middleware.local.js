module.exports = {
  all: {
    compression: {},
  },
};
