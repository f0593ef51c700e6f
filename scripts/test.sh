#!/usr/bin/env bash
# npm test. As root (CI): the system packages and the second local user (prerequisites.sh), the build, typecheck,
# lint and every tier of tests. As any other user: the build, typecheck, lint and the tiers that need no root (unit:
# logic alone; cmd: the commands against the simulator, in process); the summary then names, on stderr, the tiers
# left to root and how to run them, and the run passes. .ci/run checks that no tier was left out.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

root=0
[ "$(id -u)" = 0 ] && root=1
[ "$root" = 1 ] && scripts/prerequisites.sh
npm run build
npm run typecheck
npm run lint
if [ "$root" = 1 ]; then
  exec npx vitest run
fi
# The tiers of vitest.config.ts whose needsRoot is false.
exec npx vitest run --project unit --project cmd
