// Package deploy holds govkit's deployment recipes — the systemd units
// with their example /etc/govkit files, the one-host docker-compose.yml,
// the Helm chart under helm/govkit, the Prometheus alert rules and scrape
// jobs under prometheus/ — and the tests that check them without a
// container engine or a cluster: the compose file is loaded and validated
// by compose-go (the loader of `docker compose`, with the Compose
// Specification's schema), the Dockerfile (at the repository root) is read
// instruction by instruction and its build command is run, the units go
// through `systemd-analyze verify` where systemd is installed, the chart is
// linted and rendered by a helm binary built from its Go module, its
// manifests checked one by one, and the alert rules are parsed with
// Prometheus's PromQL parser. Then each recipe is walked as far as the
// machine allows: the binary the Dockerfile builds runs with the settings
// each recipe gives it (check-config for every recipe; the systemd one
// also serves, takes its first administrator and signs in).
package deploy
