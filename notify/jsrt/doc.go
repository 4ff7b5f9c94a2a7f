// Package jsrt runs the JavaScript of notify's configuration files: CommonJS
// modules such as src/config.local.js of an existing NotifyBC deployment,
// evaluated in goja, with the functions they define (oidc.isAdmin,
// notification.broadcastCustomFilterFunctions.*, …) kept callable from Go.
//
// A goja runtime is not safe for concurrent use, and config functions are
// called per request, so a Pool holds several runtimes that each evaluated
// the same modules in the same order. A function is therefore identified by
// where it sits (module and key path), not by object identity: every runtime
// has its own copy, and module-level state (a counter in a closure, say) is
// per runtime, never shared.
//
// What a module sees:
//
//   - module, exports, __filename, __dirname (the directory of the file);
//   - process.env: exactly the map the caller passes in (never the real
//     environment of this process unless the caller passes that), plus
//     process.platform and process.cwd();
//   - console.log/info/warn/error/debug, sent to Options.Log when set;
//   - setTimeout, clearTimeout and setImmediate, run by a small event loop
//     after each call so that async functions (the original's custom filter
//     functions may be async) settle before the call returns;
//   - require of a fixed set of modules (see Modules): "path" (posix join,
//     resolve, dirname, basename, extname, normalize, isAbsolute, relative,
//     sep, delimiter), "fs" (readFileSync, existsSync — enough to read
//     certificates and secrets; readFileSync returns the content as a string
//     whatever the encoding argument, as there is no Buffer), "os"
//     (hostname, platform, EOL, tmpdir, homedir), "process", and a "lodash"
//     subset (see lodashSubset) because the original's documentation uses
//     lodash in custom filter functions. Relative (and absolute) paths load
//     .js, .json and .ts files below Options.Root, the config directory —
//     the original's Helm chart has db.datasource.local.js require
//     ./db.datasource.production.js — each file once per runtime, as
//     Node's module cache does. Any other name is an error naming the
//     module and the list above.
//
// TypeScript (.ts) is transpiled to CommonJS with esbuild's Go API
// (TranspileTS) with an inline source map, so error lines point into the
// .ts file.
//
// Values are exported to Go as JSON-compatible data: map[string]any, []any,
// float64, string, bool and nil; undefined properties are left out, a Date
// becomes its ISO string, a RegExp its source; a function becomes a Func.
package jsrt
