// Package upgrade implements `govkit notify upgrade`: it moves a deployment
// of the notification service from one major version to the next (v1 → v2
// … v5 → v6), one step at a time, as the service's upgrade rules require.
//
// A deployment directory holds the files an operator writes, named for an
// environment: in v1 server/config.<env>.(json|js), server/middleware.<env>.*
// and server/datasources.<env>.*; from v2 src/config.<env>.*,
// src/middleware.<env>.* and src/datasources/db.datasource.<env>.*. Files
// named for no environment (config.json, src/config.ts) and the `test` files
// belong to the release itself and are never touched.
//
// Each step rewrites those files to the next version's layout and keys and
// prints the manual steps of that version as a numbered checklist. .json
// files are rewritten as JSON with their keys in the order they had. .js
// files must have the shape `module.exports = { … }`; they are edited as
// text at the positions goja's parser reports, so expressions, functions,
// process.env reads and comments outside the moved properties stay as
// written (comments that cannot be kept are listed in the output).
//
// A dry run prints the changes as a unified diff. A real run writes all the
// files of a step or none: every file it changes or removes is first copied
// to <dir>/upgrade-backup/v<N>-to-v<N+1>/<its path>, new contents are written
// to temporary files and renamed into place, and on any failure the
// originals are put back. Running a step again changes nothing.
//
// With --database, a step also does its data work through the MongoDB
// driver: v2 → v3 renames stored failedDispatches / successDispatches to
// dispatch.failed / dispatch.successful, v4 → v5 reports administrator
// emails that differ only by case, v5 → v6 checks the feature compatibility
// version. Where the server cannot run a command, the equivalent mongosh
// commands are printed instead.
package upgrade
