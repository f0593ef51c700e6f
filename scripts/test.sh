#!/usr/bin/env bash
# npm test. As root (CI): the system packages and the second local user (prerequisites.sh), the build, typecheck,
# lint and every test. As any other user: the build, typecheck, lint and the unit tests (logic alone, no root, no
# network), then one line saying what the rest needs, and a non-zero exit: a run that skipped tests never passes.
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

npx vitest run --project unit
echo "only typecheck, lint and the unit tests ran: the end-to-end tests need root (namespaces and sshd for the simulated VMs, a second local user); run npm test as root, as CI does" >&2
exit 1
