#!/usr/bin/env bash
# Recording test doubles for a simulated Targon VM: apt-get, dpkg, systemctl, systemd-run, curl,
# nvidia-smi, and (once "installed") docker and nvidia-ctk. One script, dispatched on the name it is
# called by. Each call is appended to /var/log/sim-doubles/calls.log (and, with its start and end times, to
# calls.log.timed), and each double leaves the files
# and state the real tool would, so that a second bootstrap sees an installed system.
set -uo pipefail

STATE=/var/lib/sim-doubles
CALLS=/var/log/sim-doubles/calls.log
DOUBLES=/usr/local/lib/sim-doubles
# shellcheck source=/dev/null
[ -f /etc/sim-vm/scenario.env ] && . /etc/sim-vm/scenario.env
GPU_NAME=${SIM_GPU_NAME:-NVIDIA RTX PRO 6000 Blackwell Server Edition}
GPU_COUNT=${SIM_GPU_COUNT:-1}
DRIVER_VERSION=595.45.04

tool=${0##*/}
if [ "${1:-}" = --preinstall ]; then
  tool=preinstall
  shift
elif [ "${1:-}" = --reboot ]; then
  tool=reboot
  shift
fi
# A transient unit's supervisor (see supervise) is no call of a tool: not recorded.
if [ "${1:-}" = --supervise ]; then
  tool=supervise
  shift
else
  printf '%s %s\n' "$tool" "$*" >>"$CALLS"
  # The same calls with when each started and ended (epoch ms), to show what overlapped.
  call="$tool $*"
  timed() {
    local micros=${EPOCHREALTIME//[!0-9]/}
    printf '%s %s %s\n' "${micros%???}" "$1" "$call" >>"$CALLS.timed"
  }
  timed start
  trap 'timed end' EXIT
fi

# Sleeps for the sum of its arguments (seconds), as the latency model says (test/vm/latency.ts); not at all without it.
latency() {
  local seconds arg modelled=0
  # Without the model every argument is 0: no awk to add them up (a bootstrap calls this a dozen times).
  for arg in "$@"; do [ "${arg:-0}" = 0 ] || modelled=1; done
  [ "$modelled" = 1 ] || return 0
  seconds=$(awk 'BEGIN { s = 0; for (i = 1; i < ARGC; i++) s += ARGV[i]; print s }' "$@")
  [ "$seconds" = 0 ] || sleep "$seconds"
}

lock_held() {
  fuser /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock >/dev/null 2>&1
}

installed() { grep -qx "$1" "$STATE/packages" 2>/dev/null; }

json() { python3 -c "$1" "${@:2}"; }

install_package() {
  local package=$1
  installed "$package" || echo "$package" >>"$STATE/packages"
  case $package in
    docker-ce | docker.io)
      install -m 0755 "$DOUBLES/double.sh" /usr/bin/docker
      touch "$STATE/units/docker.enabled"
      docker_start
      ;;
    nvidia-container-toolkit)
      install -m 0755 "$DOUBLES/double.sh" /usr/bin/nvidia-ctk
      install -m 0755 "$DOUBLES/double.sh" /usr/bin/nvidia-container-cli
      install -m 0755 "$DOUBLES/double.sh" /usr/bin/nvidia-container-runtime
      ;;
  esac
}

# A pull from Docker Hub: the first SIM_PULL_FAILURES attempts meet its anonymous rate limit.
docker_pull() {
  local attempts
  attempts=$(($(cat "$STATE/pull-attempts" 2>/dev/null || echo 0) + 1))
  echo "$attempts" >"$STATE/pull-attempts"
  if [ "$attempts" -le "${SIM_PULL_FAILURES:-0}" ]; then
    echo "Error response from daemon: toomanyrequests: You have reached your unauthenticated pull rate limit. https://www.docker.com/increase-rate-limit" >&2
    return 1
  fi
  latency "${SIM_LATENCY_IMAGE_PULL:-0}"
  grep -qx "$1" "$STATE/images" 2>/dev/null || echo "$1" >>"$STATE/images"
  echo "docker.io/library/$1"
}

# The daemon reads daemon.json when it starts; `docker info` reports what it read.
docker_start() {
  touch "$STATE/units/docker.active"
  if [ -f /etc/docker/daemon.json ]; then cp /etc/docker/daemon.json "$STATE/docker-live.json"; else echo '{}' >"$STATE/docker-live.json"; fi
}

# /proc rather than kill -0, which a non-root caller may not send to a root service.
pid_alive() { [ -f "$STATE/units/$1.pid" ] && [ -d "/proc/$(cat "$STATE/units/$1.pid")" ]; }

unit_active() {
  case $1 in
    docker) [ -f "$STATE/units/docker.active" ] ;;
    ssh | sshd) return 0 ;;
    *) pid_alive "$1" ;;
  esac
}

start_service() {
  local unit=$1 file=/etc/systemd/system/$1.service
  [ -f "$file" ] || { echo "Failed to start $unit.service: Unit $unit.service not found." >&2; return 5; }
  local env_file exec_start user log=/var/log/sim-doubles/$unit.log
  env_file=$(sed -n 's/^EnvironmentFile=//p' "$file")
  exec_start=$(sed -n 's/^ExecStart=//p' "$file")
  user=$(sed -n 's/^User=//p' "$file")
  [ "$unit" = dstack-shim ] && log=/root/.dstack/shim.log
  local as=()
  # As systemd does with User=: the service's own uid, gid and groups.
  [ -n "$user" ] && [ "$user" != root ] && as=(setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups)
  (
    cd "$(sed -n 's/^WorkingDirectory=//p' "$file")" 2>/dev/null || cd /
    set -a
    # shellcheck source=/dev/null
    [ -n "$env_file" ] && . "$env_file"
    set +a
    # shellcheck disable=SC2086 # ExecStart is a command line: the binary and its arguments
    setsid "${as[@]}" $exec_start >>"$log" 2>&1 </dev/null &
    echo $! >"$STATE/units/$unit.pid"
  )
}

# As systemctl stop: TERM, and back once the process is gone (or a zombie), within 2 s.
stop_service() {
  local pid state waited=0
  if pid_alive "$1"; then
    pid=$(cat "$STATE/units/$1.pid")
    if kill "$pid" 2>/dev/null; then
      while [ "$waited" -lt 100 ] && read -r _ _ state _ 2>/dev/null <"/proc/$pid/stat" && [ "$state" != Z ]; do
        sleep 0.02
        waited=$((waited + 1))
      done
    fi
  fi
  rm -f "$STATE/units/$1.pid"
}

# ---- transient units (systemd-run): $STATE/units/NAME.transient marks one; while its main process runs, NAME.pid
# holds the supervisor's pid (a session leader, so its process group is the unit's "cgroup"); once it ends, a unit
# that failed stays loaded (NAME.result, NAME.status) until reset-failed, unless it was started with --collect; one
# that succeeded is garbage-collected, as systemd does with transient units.

transient() { [ -f "$STATE/units/$1.transient" ]; }

forget_unit() { rm -f "$STATE/units/$1".{pid,transient,started,result,status,code,user,workdir,stopping}; }

# systemd's timestamp form, e.g. "Wed 2026-12-02 03:05:27 UTC".
systemd_time() { date -u '+%a %Y-%m-%d %H:%M:%S UTC'; }

# The supervisor: runs the unit's command (as its user, in its directory, with a clean environment as systemd gives
# one) and records how it ended. `systemctl stop` sends TERM to the whole process group, this shell included.
supervise() {
  local unit=$1 out=$2 err=$3 dir=$4 user=$5
  shift 6 # the unit's settings, then "--"
  local as=() home=/root status code=1 result
  if [ -n "$user" ] && [ "$user" != root ]; then
    as=(setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups)
    home=$(getent passwd "$user" | cut -d: -f6)
  fi
  trap 'echo 1 >"$STATE/units/$unit.stopping"' TERM
  # systemd starts no process when the directory is missing: status 200/CHDIR.
  if ! cd "$dir" 2>/dev/null; then
    end_unit "$unit" exit-code 200 1
    return
  fi
  (
    exec "${as[@]}" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$home" USER="${user:-root}" \
      LOGNAME="${user:-root}" SHELL=/bin/bash "$@"
  ) >>"$out" 2>>"$err" </dev/null &
  local child=$!
  wait "$child"
  status=$?
  # A trapped TERM ends the wait early: wait again until the command has really ended.
  while kill -0 "$child" 2>/dev/null; do
    wait "$child"
    status=$?
  done
  if [ -f "$STATE/units/$unit.stopping" ]; then
    result=success
  elif [ "$status" = 0 ]; then
    result=success
  elif [ "$status" -gt 128 ]; then
    result=signal code=2 status=$((status - 128))
  else
    result=exit-code
  fi
  end_unit "$unit" "$result" "$status" "$code"
}

# How a transient unit ended: collected (gone), or loaded as failed with its result, status and code.
end_unit() {
  local unit=$1 result=$2
  if [ "$result" = success ] || [ "$(cat "$STATE/units/$unit.transient")" = collect ]; then
    forget_unit "$unit"
  else
    echo "$result" >"$STATE/units/$unit.result"
    echo "$3" >"$STATE/units/$unit.status"
    echo "$4" >"$STATE/units/$unit.code"
    rm -f "$STATE/units/$unit.pid"
  fi
}

start_transient() {
  local unit='' out=/dev/null err='' dir=/ user='' collect=keep envs=() property
  while [ $# -gt 0 ]; do
    case $1 in
      --unit=*) unit=${1#--unit=} ;;
      --uid=*) user=${1#--uid=} ;;
      --setenv=*) envs+=("${1#--setenv=}") ;;
      --collect | -G) collect=collect ;;
      -p | --property | --property=*)
        if [ "$1" = -p ] || [ "$1" = --property ]; then
          shift
          property=$1
        else
          property=${1#--property=}
        fi
        case $property in
          StandardOutput=append:*) out=${property#StandardOutput=append:} ;;
          StandardError=append:*) err=${property#StandardError=append:} ;;
          WorkingDirectory=*) dir=${property#WorkingDirectory=} ;;
        esac
        ;;
      --*) ;;
      *) break ;;
    esac
    shift
  done
  unit=${unit%.service}
  if [ "$(id -u)" != 0 ]; then
    echo "Failed to start transient service unit: Interactive authentication required." >&2
    return 1
  fi
  if [ -z "$unit" ] || [ $# = 0 ]; then
    echo "systemd-run: the double needs --unit= and a command" >&2
    return 1
  fi
  if pid_alive "$unit" || [ -f "$STATE/units/$unit.result" ]; then
    echo "Failed to start transient service unit: Unit $unit.service already exists." >&2
    return 1
  fi
  [ -n "$user" ] && ! id "$user" >/dev/null 2>&1 && {
    echo "Failed to start transient service unit: User $user does not exist." >&2
    return 1
  }
  forget_unit "$unit"
  echo "$collect" >"$STATE/units/$unit.transient"
  systemd_time >"$STATE/units/$unit.started"
  echo "${user:-root}" >"$STATE/units/$unit.user"
  echo "$dir" >"$STATE/units/$unit.workdir"
  setsid "$DOUBLES/double.sh" --supervise "$unit" "$out" "${err:-$out}" "$dir" "$user" -- env "${envs[@]}" "$@" </dev/null >/dev/null 2>&1 &
  echo $! >"$STATE/units/$unit.pid"
  echo "Running as unit: $unit.service"
}

# systemctl stop of a transient unit: TERM to its process group, KILL after a while (TimeoutStopSec), then gone.
stop_transient() {
  local unit=$1 pid waited=0
  if ! pid_alive "$unit"; then
    if [ -f "$STATE/units/$unit.result" ]; then forget_unit "$unit"; return 0; fi
    echo "Failed to stop $unit.service: Unit $unit.service not loaded." >&2
    return 5
  fi
  pid=$(cat "$STATE/units/$unit.pid")
  kill -TERM -- "-$pid" 2>/dev/null
  while [ -d "/proc/$pid" ]; do
    sleep 0.1
    waited=$((waited + 1))
    [ "$waited" = 100 ] && kill -KILL -- "-$pid" 2>/dev/null
  done
  forget_unit "$unit"
}

# `systemctl show -p …`: the properties asked for (all known ones without -p), as Key=value lines (--value: values only).
show_unit() {
  local unit=$1 value=$2
  shift 2
  local properties=("$@") property active=inactive sub=dead load=not-found result=success status=0 code=0 pid=0 started='' user='' dir='' property_value
  [ ${#properties[@]} = 0 ] && properties=(Id LoadState ActiveState SubState Result ExecMainPID ExecMainCode ExecMainStatus ExecMainStartTimestamp User WorkingDirectory)
  if transient "$unit"; then
    load=loaded
    started=$(cat "$STATE/units/$unit.started")
    user=$(cat "$STATE/units/$unit.user")
    dir=$(cat "$STATE/units/$unit.workdir")
    if pid_alive "$unit"; then
      active=active sub=running pid=$(cat "$STATE/units/$unit.pid")
    elif [ -f "$STATE/units/$unit.result" ]; then
      active=failed sub=failed result=$(cat "$STATE/units/$unit.result") status=$(cat "$STATE/units/$unit.status")
      code=$(cat "$STATE/units/$unit.code")
    fi
  elif [ -f "/etc/systemd/system/$unit.service" ] || [ "$unit" = docker ] || [ "$unit" = ssh ]; then
    load=loaded
    if unit_active "$unit"; then active=active sub=running; fi
  fi
  for property in "${properties[@]}"; do
    case $property in
      Id) property_value=$unit.service ;;
      LoadState) property_value=$load ;;
      ActiveState) property_value=$active ;;
      SubState) property_value=$sub ;;
      Result) property_value=$result ;;
      ExecMainPID) property_value=$pid ;;
      ExecMainCode) property_value=$code ;;
      ExecMainStatus) property_value=$status ;;
      ExecMainStartTimestamp) property_value=$started ;;
      User) property_value=$user ;;
      WorkingDirectory) property_value=$dir ;;
      *) property_value= ;;
    esac
    if [ "$value" = 1 ]; then printf '%s\n' "$property_value"; else printf '%s=%s\n' "$property" "$property_value"; fi
  done
}

# A reboot: every unit stops, then the enabled ones start again (Docker included). Transient units are gone.
reboot_units() {
  local pidfile unit
  # A reboot starts with no netfilter rules: what a unit applied at boot must come back through it.
  iptables -w -F && iptables -w -X
  for pidfile in "$STATE"/units/*.pid; do
    [ -e "$pidfile" ] || continue
    unit=$(basename "$pidfile" .pid)
    if transient "$unit"; then
      kill -KILL -- "-$(cat "$pidfile")" 2>/dev/null
      forget_unit "$unit"
    else
      stop_service "$unit"
    fi
  done
  for unit in "$STATE"/units/*.transient; do
    [ -e "$unit" ] && forget_unit "$(basename "$unit" .transient)"
  done
  rm -f "$STATE/units/docker.active"
  for unit in "$STATE"/units/*.enabled; do
    [ -e "$unit" ] || continue
    unit=$(basename "$unit" .enabled)
    if [ "$unit" = docker ]; then docker_start; else start_service "$unit"; fi
  done
}

case $tool in
  supervise)
    supervise "$@"
    ;;

  preinstall)
    install_package "$1"
    ;;

  reboot)
    reboot_units
    ;;

  apt-get)
    verb=
    packages=()
    while [ $# -gt 0 ]; do
      case $1 in
        -o) shift ;;
        -*) ;;
        *) if [ -z "$verb" ]; then verb=$1; else packages+=("$1"); fi ;;
      esac
      shift
    done
    case $verb in
      update)
        if lock_held; then
          echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1 (unattended-upgr)" >&2
          exit 100
        fi
        per_repository=()
        while IFS= read -r _; do per_repository+=("${SIM_LATENCY_APT_UPDATE_PER_REPOSITORY:-0}"); done < <(find /etc/apt/sources.list.d -name '*.list' 2>/dev/null)
        latency "${SIM_LATENCY_APT_UPDATE:-0}" "${per_repository[@]}"
        ;;
      install)
        while lock_held; do sleep 0.2; done # as with -o DPkg::Lock::Timeout
        for package in "${packages[@]}"; do
          if [ "$package" = "${SIM_FAIL_PACKAGE:-}" ]; then
            echo "E: Unable to locate package $package" >&2
            exit 100
          fi
        done
        modelled=("${SIM_LATENCY_APT_INSTALL:-0}")
        for package in "${packages[@]}"; do
          case $package in
            docker-ce) modelled+=("${SIM_LATENCY_APT_INSTALL_DOCKER:-0}") ;;
            nvidia-container-toolkit) modelled+=("${SIM_LATENCY_APT_INSTALL_TOOLKIT:-0}") ;;
          esac
        done
        latency "${modelled[@]}"
        for package in "${packages[@]}"; do install_package "$package"; done
        ;;
    esac
    ;;

  dpkg)
    case ${1:-} in
      -s | --status)
        if installed "$2"; then
          printf 'Package: %s\nStatus: install ok installed\nVersion: 1.17.8-1\n' "$2"
        else
          echo "dpkg-query: package '$2' is not installed and no information is available" >&2
          exit 1
        fi
        ;;
      --print-architecture) echo amd64 ;;
      --configure) ;;
    esac
    ;;

  systemctl)
    args=()
    now=0
    quiet=0
    value=0
    properties=()
    while [ $# -gt 0 ]; do
      case $1 in
        --now) now=1 ;;
        --quiet | -q) quiet=1 ;;
        --value) value=1 ;;
        -p | --property)
          shift
          IFS=, read -ra more <<<"$1"
          properties+=("${more[@]}")
          ;;
        --property=*)
          IFS=, read -ra more <<<"${1#--property=}"
          properties+=("${more[@]}")
          ;;
        -*) ;;
        *) args+=("${1%.service}") ;;
      esac
      shift
    done
    verb=${args[0]:-}
    unit=${args[1]:-}
    case $verb in
      is-active)
        if unit_active "$unit"; then
          [ "$quiet" = 1 ] || echo active
        elif [ -f "$STATE/units/$unit.result" ]; then
          [ "$quiet" = 1 ] || echo failed
          exit 3
        else
          [ "$quiet" = 1 ] || echo inactive
          exit 3
        fi
        ;;
      show)
        show_unit "$unit" "$value" "${properties[@]}"
        ;;
      # The running units whose names match the pattern (all without one), as `--plain --no-legend` prints them.
      list-units)
        for pidfile in "$STATE"/units/*.pid; do
          [ -e "$pidfile" ] || continue
          name=$(basename "$pidfile" .pid)
          # shellcheck disable=SC2053 # the pattern is a glob, as systemctl matches it
          [[ $name == ${unit:-*} ]] || continue
          if pid_alive "$name"; then printf '%s.service loaded active running %s\n' "$name" "$name"; fi
        done
        ;;
      reset-failed)
        if transient "$unit" && ! pid_alive "$unit"; then forget_unit "$unit"; fi
        ;;
      is-enabled)
        if [ -f "$STATE/units/$unit.enabled" ]; then echo enabled; else echo disabled; exit 1; fi
        ;;
      disable)
        rm -f "$STATE/units/$unit.enabled"
        if [ "$now" = 1 ]; then stop_service "$unit"; fi
        ;;
      enable)
        touch "$STATE/units/$unit.enabled"
        if [ "$now" = 1 ]; then
          if [ "$unit" = docker ]; then docker_start; elif ! unit_active "$unit"; then start_service "$unit"; fi
        fi
        ;;
      start)
        if [ "$unit" = docker ]; then docker_start; elif ! unit_active "$unit"; then start_service "$unit"; fi
        ;;
      restart)
        if [ "$unit" = docker ]; then latency "${SIM_LATENCY_DOCKER_RESTART:-0}"; docker_start; else stop_service "$unit"; start_service "$unit"; fi
        ;;
      stop)
        if [ "$unit" = docker ]; then
          rm -f "$STATE/units/docker.active"
        elif transient "$unit"; then
          stop_transient "$unit" || exit $?
        elif [ ! -f "/etc/systemd/system/$unit.service" ] && ! pid_alive "$unit"; then
          echo "Failed to stop $unit.service: Unit $unit.service not loaded." >&2
          exit 5
        else
          stop_service "$unit"
        fi
        ;;
      reload)
        if [ "$unit" = ssh ] || [ "$unit" = sshd ]; then kill -HUP "$(cat /run/sshd.pid)"; fi
        ;;
      daemon-reload) ;;
      status)
        if unit_active "$unit"; then echo "● $unit.service - active (running)"; else echo "○ $unit.service - inactive (dead)"; exit 3; fi
        ;;
    esac
    ;;

  systemd-run)
    start_transient "$@" || exit 1
    ;;

  curl)
    output=
    url=
    while [ $# -gt 0 ]; do
      case $1 in
        -o | --output) output=$2; shift ;;
        http://* | https://*) url=$1 ;;
      esac
      shift
    done
    case $url in
      https://download.docker.com/linux/ubuntu/gpg | https://nvidia.github.io/libnvidia-container/gpgkey)
        body=$'-----BEGIN PGP PUBLIC KEY BLOCK-----\nsimulated\n-----END PGP PUBLIC KEY BLOCK-----'
        latency "${SIM_LATENCY_KEY_OR_LIST_DOWNLOAD:-0}"
        ;;
      https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list)
        # shellcheck disable=SC2016 # the literal $(ARCH) is what NVIDIA's list contains
        body='deb https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /'
        latency "${SIM_LATENCY_KEY_OR_LIST_DOWNLOAD:-0}"
        ;;
      https://dstack-runner-downloads.s3.eu-west-1.amazonaws.com/*/binaries/dstack-shim-linux-*)
        version=${url#https://dstack-runner-downloads.s3.eu-west-1.amazonaws.com/}
        version=${version%%/*}
        [ "$version" = latest ] && version=0.21.9
        latency "${SIM_SHIM_DOWNLOAD_SECONDS:-0}" "${SIM_LATENCY_SHIM_DOWNLOAD:-0}"
        # shellcheck disable=SC2016 # the shim double's own script text
        body=$(printf '#!/usr/bin/env bash\nif [ "${1:-}" = --version ]; then echo "dstack-shim version %s"; exit 0; fi\nexec node %s/shim-server.mjs %s\n' "$version" "$DOUBLES" "$version")
        ;;
      *)
        echo "curl: (6) Could not resolve host: ${url#*://}" >&2
        exit 6
        ;;
    esac
    if [ -n "$output" ]; then printf '%s\n' "$body" >"$output"; else printf '%s\n' "$body"; fi
    ;;

  nvidia-smi)
    for ((index = 0; index < GPU_COUNT; index++)); do
      case "${1:-}" in
        -L) echo "GPU $index: $GPU_NAME (UUID: GPU-sim-$index)" ;;
        --query-gpu=driver_version) echo "$DRIVER_VERSION" ;;
        # Utilisation as the test sets it (the file /run/vm/gpu-util on the host side; 0 without it).
        --query-gpu=index,utilization.gpu,memory.used,memory.total)
          util=$(cat /run/vm/gpu-util 2>/dev/null || echo 0)
          echo "$index, ${util:-0}, $((util > 0 ? 40960 : 0)), 97887"
          ;;
        --query-gpu=*) echo "$GPU_NAME, $DRIVER_VERSION" ;;
        *) echo "| $index  $GPU_NAME  Driver Version: $DRIVER_VERSION |" ;;
      esac
    done
    ;;

  nvidia-container-cli)
    if [ "${SIM_CONTAINER_GPU_FAILURE:-0}" = 1 ]; then
      echo "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch" >&2
      exit 1
    fi
    if [ "${1:-}" = info ]; then
      printf 'NVRM version:   %s\nCUDA version:   13.0\n\n' "$DRIVER_VERSION"
      for ((index = 0; index < GPU_COUNT; index++)); do
        printf 'Device Index:   %s\nDevice Minor:   %s\nModel:          %s\nGPU UUID:       GPU-sim-%s\n\n' "$index" "$index" "$GPU_NAME" "$index"
      done
    fi
    ;;

  nvidia-ctk)
    case "${1:-}" in
      --version) printf 'NVIDIA Container Toolkit CLI version 1.17.8\ncommit: simulated\n' ;;
      runtime)
        json 'import json,os,sys
path="/etc/docker/daemon.json"
data=json.load(open(path)) if os.path.exists(path) else {}
data.setdefault("runtimes",{})["nvidia"]={"path":"nvidia-container-runtime","args":[]}
os.makedirs("/etc/docker",exist_ok=True)
json.dump(data,open(path,"w"),indent=2)'
        ;;
    esac
    ;;

  docker)
    if [ "${1:-}" = --version ]; then
      echo "Docker version 28.2.2, build simulated"
      exit 0
    fi
    if [ ! -f "$STATE/units/docker.active" ]; then
      echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2
      exit 1
    fi
    # What the daemon read from daemon.json when it started (docker_start), without parsing JSON.
    live=$(cat "$STATE/docker-live.json")
    driver=systemd
    [[ $live == *native.cgroupdriver=cgroupfs* ]] && driver=cgroupfs
    runtimes='{"io.containerd.runc.v2":{"path":"runc"},"runc":{"path":"runc"}'
    [[ $live == *'"nvidia"'* ]] && runtimes+=',"nvidia":{"args":[],"path":"nvidia-container-runtime"}'
    runtimes+='}'
    case "${1:-}" in
      # Running containers, as the test sets them (one name per line in /run/vm/containers): for root (the sampler
      # reaches it through its sudoers rule) or the docker group, as the Docker socket allows.
      ps)
        if [ "$(id -u)" != 0 ] && ! id -nG | grep -qw docker; then
          echo "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock" >&2
          exit 1
        fi
        cat /run/vm/containers 2>/dev/null || true
        ;;
      info)
        if [ "${2:-}" = -f ] || [ "${2:-}" = --format ]; then
          format=${3:-}
          format=${format//'{{.CgroupDriver}}'/$driver}
          printf '%s\n' "${format//'{{json .Runtimes}}'/$runtimes}"
        else
          printf 'Cgroup Driver: %s\nRuntimes: %s\n' "$driver" "$runtimes"
        fi
        ;;
      version) echo "28.2.2" ;;
      image)
        grep -qx "${*: -1}" "$STATE/images" 2>/dev/null || { echo "Error response from daemon: No such image: ${*: -1}" >&2; exit 1; }
        echo '[{}]'
        ;;
      pull) docker_pull "${*: -1}" || exit 1 ;;
      run)
        image=
        for arg in "${@:2}"; do
          case $arg in -* | all) ;; *) image=$arg; break ;; esac
        done
        if ! grep -qx "$image" "$STATE/images" 2>/dev/null; then
          echo "Unable to find image '$image' locally" >&2
          docker_pull "$image" >/dev/null || exit 125
        fi
        if [ "${SIM_CONTAINER_GPU_FAILURE:-0}" = 1 ]; then
          echo 'docker: Error response from daemon: failed to create task for container: nvidia-container-cli: initialization error: nvml error: driver/library version mismatch.' >&2
          exit 125
        elif [[ $runtimes == *'"nvidia"'* ]]; then
          /usr/bin/nvidia-smi -L
        else
          echo 'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].' >&2
          exit 125
        fi
        ;;
    esac
    ;;
esac
