// Package config loads the static configuration of the notification service
// from the files of an existing NotifyBC version 6 deployment, unchanged.
//
// # Layering
//
// Load merges, in ascending precedence (deep merge, arrays and every other
// non-object value replaced, null replaces too — lodash mergeWith, as the
// original):
//
//  1. the built-in defaults (Defaults), which are the values of the
//     original's src/config.ts at 6.4.1, every key and message template;
//  2. config.json and config.js in the config directory, if present (the
//     original reads them; its own config.ts is its defaults file, which
//     item 1 replaces, so a base config.ts is never read);
//  3. config.<NODE_ENV>.json, .js, .ts;
//  4. config.local.json, .js, .ts — skipped when NODE_ENV is "test".
//
// middleware.* (keys all and apiOnly; defaults DefaultMiddleware) and
// datasources/db.datasource.* (mongo uri plus driver options; default
// empty: the embedded store) are layered the same way. The original picks
// only the last existing datasource file; merging gives the same result
// unless two datasource files set different keys.
//
// The config directory defaults to ./src so that a deployment directory
// works as it is. TLS material comes from server/certs/{key,cert,ca}.pem
// beside it, as in the original.
//
// Nothing here reads the process environment: the caller passes NODE_ENV
// and the environment that .js files see as process.env (Options), and the
// value of NOTIFYBC_NODE_ROLE to ParseNodeRole.
//
// # JavaScript and TypeScript files
//
// .js files are CommonJS modules run in goja (package jsrt) with
// process.env, and require limited to fs (readFileSync, existsSync), path,
// os, process, a lodash subset, and files of the config directory by
// relative path (.js, .json, .ts; the original's Helm chart uses that);
// anything else is an error naming the module. .ts files are transpiled with esbuild's Go API and then run the
// same way. Functions (oidc.isAdmin, oidc.isAuthorizedUser,
// notification.broadcastCustomFilterFunctions.*._func, any other) become
// Func values in the tree, callable concurrently: calls run on a pool of
// runtimes that each evaluated the same files.
//
// # Refusals and warnings
//
// Every key that an older major version used and that the seed's upgrade
// history renamed or moved (RenamedKeys; e.g. smtp, inboundSmtpServer,
// notification.handleBounce, smsServiceProvider, sms.twilio,
// *.throttle.minTime, *.throttle.clientOptions) is refused with its new
// name and the upgrade command for that step, as are middleware phases of
// version 1 (initial, routes:before), datasource url/host/port/database
// (use uri), and config files still in version 1's server/ layout. Wrong
// types of known keys are refused too. All problems are reported at once
// in an *Error, with file, key path and line: the line of a JavaScript
// error, or the line where the key is written (object literals of .js and
// .json files, and of .ts files through esbuild's source map).
//
// notification.broadcastSubRequestBatchSize, email.defaultSmtp, the
// Bottleneck throttle options of version 5, datasource name/connector and
// unknown keys are accepted with a warning (Config.Warnings) and ignored.
//
// # Reading values
//
// Config has a typed field for each key the service reads; Get and Lookup
// take a dotted path for everything else; Raw returns the merged tree, for
// merging a service's configuration document over a static section (Merge,
// then DecodeSubscription for the subscription section).
package config
