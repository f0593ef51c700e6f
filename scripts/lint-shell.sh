#!/usr/bin/env bash
# Runs shellcheck over the project's shell scripts (part of npm run lint). A contributor without shellcheck gets one line
# saying it was skipped; as root it is required, since npm test installs it first (scripts/prerequisites.sh), so CI
# always runs it.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

SCRIPTS=(scripts/prerequisites.sh scripts/test.sh scripts/lint-shell.sh .ci/run src/lib/adapters/bootstrap/bootstrap.sh test/vm/vm-init.sh test/vm/doubles/double.sh)

if ! command -v shellcheck >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "shellcheck is missing; install it with scripts/prerequisites.sh (npm test does it when run as root)" >&2
    exit 1
  fi
  echo "shellcheck skipped: not installed (apt-get install shellcheck; CI runs it)" >&2
  exit 0
fi
shellcheck "${SCRIPTS[@]}"
