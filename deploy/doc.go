// Package deploy holds govkit's deployment recipes — the systemd units,
// the one-host docker-compose.yml, the Helm chart under helm/govkit — and
// the tests that check them without a container engine or a cluster: the
// compose file is loaded and validated by compose-go (the loader of
// `docker compose`, with the Compose Specification's schema), the
// Dockerfile (at the repository root) is read instruction by instruction
// and its build command is run, the units go through `systemd-analyze
// verify` where systemd is installed, and the chart is linted and rendered
// by a helm binary built from its Go module, its manifests checked one by
// one.
package deploy
