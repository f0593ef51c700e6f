#!/usr/bin/env bash
# npm test. As root (CI): the system packages and the second local user (prerequisites.sh), the build, typecheck,
# lint and every tier of tests. As any other user: the build, typecheck, lint and the tiers that need no root (unit:
# logic alone; cmd: the commands against the simulator, in process); the summary then names, on stderr, the tiers
# left to root and how to run them, and the run passes. .ci/run checks that no tier was left out.
#
# The typecheck and lint run beside the tests, which spend most of their time waiting on simulated VMs and timers:
# on two cores that saves their minute and more. Their output follows the tests'; a failure of either fails the run.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

root=0
[ "$(id -u)" = 0 ] && root=1
[ "$root" = 1 ] && scripts/prerequisites.sh
npm run build

# The tests' temporary directories (thousands a run: a HOME per CLI run, config directories, simulated VMs) go into
# one directory of this run, removed at its end when the run passed, kept for a look when it failed. Mode 1777, as
# /tmp: the second local user makes its own there too.
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/targon-tests.XXXXXX")
chmod 1777 "$TMPDIR"
export TMPDIR
# shellcheck disable=SC2317 # run by the trap below
leave_tmpdir() {
  local code=$?
  if [ "$code" = 0 ]; then
    rm -rf "$TMPDIR" || true
  else
    echo "npm test failed: its temporary files, the simulated VMs' logs among them, are kept in $TMPDIR" >&2
  fi
}
trap leave_tmpdir EXIT

checks_log=$(mktemp)
(npm run typecheck && npm run lint) >"$checks_log" 2>&1 &
checks=$!

tests=0
if [ "$root" = 1 ]; then
  npx vitest run || tests=$?
else
  # The tiers of vitest.config.ts whose needsRoot is false.
  npx vitest run --project unit --project cmd || tests=$?
fi

status=0
wait "$checks" || status=$?
cat "$checks_log"
if [ "$status" != 0 ]; then
  echo "npm test: the typecheck or lint failed (exit $status), see above" >&2
  exit "$status"
fi
exit "$tests"
