package clientip

// ParseHostPort lets the external tests' reference walk share the
// package's address parsing, which the in-place walk did not change.
var ParseHostPort = parseHostPort
