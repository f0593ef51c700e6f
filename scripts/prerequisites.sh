#!/usr/bin/env bash
# The system tools that lint and the tests need: shellcheck, and what the simulated VMs run (namespaces,
# sshd, sudo, socat, iptables, ...), crontab and systemd-analyze for the guard, git as the oracle of the sync's ignore rules, and a second local user. Silent when all are present. When some are missing and this runs as root, it
# installs their Debian/Ubuntu packages; otherwise it stops with one line naming them.
#   --check   never install, only report (for the test runner, which must not change the system)
set -Eeuo pipefail

check_only=0
[ "${1:-}" = --check ] && check_only=1

# command:package. sshd by its full path, which is how the simulated VMs start it.
TOOLS=(
  shellcheck:shellcheck
  /usr/sbin/sshd:openssh-server
  /usr/sbin/iptables:iptables
  ssh:openssh-client
  ssh-keygen:openssh-client
  sudo:sudo
  socat:socat
  fuser:psmisc
  ip:iproute2
  unshare:util-linux
  python3:python3
  crontab:cron
  systemd-analyze:systemd
  git:git
)

missing_packages() {
  local entry packages=()
  for entry in "${TOOLS[@]}"; do
    command -v "${entry%%:*}" >/dev/null 2>&1 || packages+=("${entry#*:}")
  done
  [ "${#packages[@]}" -eq 0 ] || printf '%s\n' "${packages[@]}" | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# The second local user of the shared-machine tests: created once, never removed (test/helpers/cli.ts, OTHER_USER).
OTHER_USER=targon-other
if ! id -u "$OTHER_USER" >/dev/null 2>&1; then
  if [ "$check_only" = 0 ] && [ "$(id -u)" = 0 ]; then
    useradd --create-home --shell /usr/sbin/nologin "$OTHER_USER"
  else
    echo "missing the local user $OTHER_USER that the tests act as; create it as root with: useradd --create-home $OTHER_USER (npm test does it when run as root)" >&2
    exit 1
  fi
fi

missing=$(missing_packages)
[ -z "$missing" ] && exit 0

if [ "$check_only" = 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing the packages the tests need: $missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086 # one word per package
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
  missing=$(missing_packages)
  [ -z "$missing" ] && exit 0
fi

echo "missing system packages: $missing; install them as root with: apt-get install --no-install-recommends $missing (npm test does it when run as root)" >&2
exit 1
