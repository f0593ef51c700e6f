#!/usr/bin/python3
# targon-fleet idle sampler: keeps the VM's idle clock in /var/lib/targon-fleet/idle.json.
#
# Installed by the bootstrap (step B11) as the systemd service targon-fleet-idle, run as the unprivileged system user
# targon-idle. Every interval it samples what counts as activity and records when activity was last seen, on the
# VM's own clock, so that every run of `targon status --usage` and `targon down --idle` reads the same clock:
#   - a GPU at or above the utilisation threshold (nvidia-smi);
#   - an SSH session or port-forward, except a session that forwards to the dstack shim's port (the dstack server's
#     own tunnel) and targon's own probes (their remote command is this script with --probe);
#   - a dstack task that is not terminated (the shim's API on 127.0.0.1:10998);
#   - a job of `targon run` that runs (its systemd unit targon-job-<id> is active);
#   - with "containers", a running container; with "check", the verdict of the user's idle check (run as ubuntu by
#     targon-fleet-idle-check.service: exit 0 means idle).
# Modes: (none) the sampler loop; --probe prints one live sample with the clock, as JSON, for targon's probe;
# --check-loop runs the user's check every interval (as ubuntu) and records its verdict.
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

VERSION = "3"
CONFIG = "/etc/targon-fleet/idle.conf"
# A test aid: seconds added to this VM's clock (a skewed clock), read on every sample.
CLOCK_OFFSET = "/etc/targon-fleet/clock-offset"
STATE_DIR = "/var/lib/targon-fleet"
CLOCK = STATE_DIR + "/idle.json"
# Written by the check loop (as ubuntu), in a directory of its own.
CHECK = STATE_DIR + "/check/verdict.json"
SHIM = "http://127.0.0.1:10998"
SHIM_PORT = 10998
PROBE_MARK = "idle-sampler.py --probe"
# A logged-in session's own process: "sshd: ubuntu@pts/0", "sshd: ubuntu@notty", or "sshd: ubuntu" (forwards only).
# Several terminals on one connection read "ubuntu@pts/0,pts/1".
# The unit of a `targon run` job; only ids of this form are reported.
JOB_UNIT = re.compile(r"^targon-job-(j-[0-9]{8}-[0-9]{6}-[0-9a-f]{6})\.service$")
SESSION = re.compile(r"^sshd(-session)?: [a-z_][a-z0-9_.-]*(@\S+)?$")


def now():
    try:
        with open(CLOCK_OFFSET) as f:
            offset = float(f.read().strip() or 0)
    except (OSError, ValueError):
        offset = 0
    return time.time() + offset


def config_text():
    """The config, which is 0640 root:targon-idle (a check command may carry a token): the sampler reads it through its
    group; what runs as ubuntu (the probe, the check loop) reads it through sudo."""
    try:
        with open(CONFIG) as f:
            return f.read()
    except PermissionError:
        out = run(["sudo", "-n", "/usr/bin/cat", CONFIG])
        if out is None:
            raise
        return out


def config():
    try:
        loaded = json.loads(config_text())
        return {
            "interval_s": max(1, int(loaded.get("interval_s", 60))),
            "threshold_pct": int(loaded.get("threshold_pct", 10)),
            "limit_s": loaded.get("limit_s") if isinstance(loaded.get("limit_s"), (int, float)) else None,
            "containers": bool(loaded.get("containers", False)),
            "check": loaded.get("check") if isinstance(loaded.get("check"), str) else None,
            # targon extend --by: no idle deletion before this time, on this VM's clock.
            "hold_until": loaded.get("hold_until") if isinstance(loaded.get("hold_until"), (int, float)) else None,
        }
    except (OSError, ValueError, TypeError, AttributeError):
        # A config that cannot be read changes nothing for the worse: the defaults, and no limit.
        return {"interval_s": 60, "threshold_pct": 10, "limit_s": None, "containers": False, "check": None, "hold_until": None}


def run(argv, timeout=10):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return done.stdout if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def gpus():
    out = run(["nvidia-smi", "--query-gpu=index,utilization.gpu,memory.used,memory.total", "--format=csv,noheader,nounits"])
    if out is None:
        return None
    found = []
    for line in out.splitlines():
        parts = [part.strip() for part in line.split(",")]
        # A row that does not read as numbers ("[N/A]" under MIG, "[GPU requires reset]") makes the GPUs unreadable.
        if len(parts) != 4 or not all(re.fullmatch(r"\d+(\.\d+)?", part) for part in parts):
            return None
        found.append({"index": int(float(parts[0])), "util_pct": float(parts[1]), "mem_used_mib": float(parts[2]), "mem_total_mib": float(parts[3])})
    return found or None


def processes():
    out = run(["ps", "-eo", "pid=,ppid=,args="])
    if not out:
        return None
    table = {}
    for line in out.splitlines():
        match = re.match(r"\s*(\d+)\s+(\d+)\s+(.*)$", line)
        if match:
            table[int(match.group(1))] = (int(match.group(2)), match.group(3))
    return table


def forwards_by_pid():
    """The forwarded connections each process holds (a read-only ss, allowed to this user by sudoers)."""
    out = run(["sudo", "-n", "/usr/bin/ss", "-Htnp", "state", "established"]) or ""
    held = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        local, peer = fields[-3], fields[-2]
        for pid in re.findall(r"pid=(\d+)", fields[-1]):
            held.setdefault(int(pid), []).append((local.rsplit(":", 1)[-1], peer.rsplit(":", 1)[-1]))
    return held


def sessions(table, shim_tunnels, seen_bare):
    """
    SSH sessions that count as activity, the sessions found forwarding to the shim (remembered by pid), and the bare
    sessions seen now (no terminal, no command). A bare session is a tunnel, counted only once it was also bare when
    looked at before (seen_bare): a probe that has just logged in looks bare for a moment.
    """
    children = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)

    def descendants(pid):
        stack, seen = list(children.get(pid, [])), []
        while stack:
            child = stack.pop()
            seen.append(child)
            stack.extend(children.get(child, []))
        return seen

    forwards = forwards_by_pid()
    # Remembered by pid and start time, so that a later process with the same pid is not taken for it.
    tunnels = set(key for key in (tuple(each) for each in shim_tunnels if isinstance(each, list) and len(each) == 2) if key[0] in table and started(key[0]) == key[1])
    counted, bare = [], []
    for pid, (_, args) in table.items():
        if not SESSION.match(args):
            continue
        if any(PROBE_MARK in table[child][1] for child in descendants(pid) if child in table):
            continue
        terminal = "@pts/" in args
        # A bare session forwarding to the shim's port: the dstack server's own tunnel (never one with a terminal).
        if not terminal and any(peer == str(SHIM_PORT) for local, peer in forwards.get(pid, []) if local != "22"):
            tunnels.add((pid, started(pid)))
        if not terminal and (pid, started(pid)) in tunnels:
            continue
        # Without a terminal or a command of its own, a session is there for its forwards: a tunnel.
        if terminal or children.get(pid):
            counted.append({"pid": pid, "kind": "session"})
            continue
        bare.append(pid)
        if pid in seen_bare:
            counted.append({"pid": pid, "kind": "tunnel"})
    return counted, sorted([list(key) for key in tunnels]), bare


def started(pid):
    """When a process started (clock ticks since boot), to tell it from a later one with the same pid."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def tasks():
    """The shim's tasks; [] when no shim listens (nothing can run one), None when it answers but cannot be read."""
    try:
        with urllib.request.urlopen(SHIM + "/api/tasks", timeout=10) as answer:
            ids = json.loads(answer.read(65536)).get("ids") or []
        if not isinstance(ids, list):
            return None
        found = []
        for task in ids[:64]:
            if not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", str(task)):
                continue
            try:
                with urllib.request.urlopen(SHIM + "/api/tasks/" + str(task), timeout=10) as answer:
                    status = str(json.loads(answer.read(65536)).get("status", "unknown"))[:32]
            except Exception:
                # Gone between the list and the read, or unreadable: not known to be terminated.
                status = "unknown"
            found.append({"id": str(task), "status": status})
        return found
    except ConnectionRefusedError:
        return []
    except urllib.error.URLError as error:
        return [] if isinstance(error.reason, ConnectionRefusedError) else None
    except Exception:
        return None


def jobs():
    """The ids of the jobs whose units run (systemctl answers any user)."""
    out = run(["systemctl", "list-units", "--type=service", "--state=active", "--plain", "--no-legend", "targon-job-*"])
    if out is None:
        return None
    found = [JOB_UNIT.match(line.split()[0]) for line in out.splitlines() if line.strip()]
    return [match.group(1) for match in found if match][:64]


def containers():
    """Running containers, through the one docker command sudoers allows this user (never the docker group, which is as
    good as root)."""
    out = run(["sudo", "-n", "/usr/bin/docker", "ps", "--format", "{{.Names}}"])
    return None if out is None else [name for name in out.splitlines() if name][:64]


def check_verdict(settings, at):
    if not settings["check"]:
        return None
    try:
        with open(CHECK) as f:
            verdict = json.load(f)
        # A verdict older than three intervals says nothing.
        if at - float(verdict["at"]) > 3 * settings["interval_s"] + 30:
            return "stale"
        return "idle" if verdict["exit_code"] == 0 else "busy"
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown"


def sample(settings, shim_tunnels, seen_bare):
    at = now()
    table = processes()
    active_sessions, tunnels, bare = sessions(table or {}, shim_tunnels, seen_bare)
    seen = {
        "gpus": gpus(),
        "sessions": active_sessions,
        "tasks": tasks(),
        "containers": containers() if settings["containers"] else None,
        "jobs": jobs(),
    }
    busy = []
    for gpu in seen["gpus"] or []:
        if gpu["util_pct"] >= settings["threshold_pct"]:
            busy.append("gpu %d at %d %%" % (gpu["index"], gpu["util_pct"]))
    for session in active_sessions:
        busy.append("ssh %s" % session["kind"])
    for task in seen["tasks"] or []:
        if task["status"] != "terminated":
            busy.append("dstack task %s %s" % (task["id"], task["status"]))
    for name in seen["containers"] or []:
        busy.append("container %s" % name)
    for job in seen["jobs"] or []:
        busy.append("job %s" % job)
    verdict = check_verdict(settings, at)
    if verdict in ("busy", "unknown", "stale"):
        busy.append("idle check: %s" % verdict)
    # What cannot be read might be busy.
    if seen["gpus"] is None:
        busy.append("gpu unreadable")
    if table is None:
        busy.append("processes unreadable")
    if seen["tasks"] is None:
        busy.append("dstack tasks unreadable")
    if settings["containers"] and seen["containers"] is None:
        busy.append("containers unreadable")
    if seen["jobs"] is None:
        busy.append("jobs unreadable")
    return at, seen, busy, tunnels, bare


def write_clock(clock):
    """Replaces the clock file; when it cannot be written (a full disk), the clock goes stale and reads as unreadable."""
    tmp = CLOCK + ".tmp"
    try:
        with open(tmp, "w") as f:
            json.dump(clock, f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, CLOCK)
    except OSError:
        pass


def read_clock():
    try:
        with open(CLOCK) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def sampler():
    previous = read_clock() or {}
    last_active = previous.get("last_active_at")
    sampled_at = previous.get("sampled_at")
    # After a reboot, what was remembered of the processes means nothing, and the time in between was not watched.
    rebooted = previous.get("boot_id") != boot_id()
    shim_tunnels = [] if rebooted else previous.get("shim_tunnels") or []
    if rebooted:
        last_active = None
    bare = []
    started_at = now()
    while True:
        settings = config()
        try:
            at, seen, busy, shim_tunnels, bare = sample(settings, shim_tunnels, bare)
        except Exception as error:
            # A sample that fails counts as activity, and the loop goes on.
            at, seen, busy = now(), {"gpus": None, "sessions": [], "tasks": None, "containers": None, "jobs": None}, ["sampler error: %s" % type(error).__name__]
        # What was not watched counts as activity: a first sample, a reboot, a clock that went back behind the last
        # activity, and a gap in the samples (the sampler stopped, the VM was suspended, the clock jumped ahead).
        gap = not isinstance(sampled_at, (int, float)) or at - sampled_at > 2 * settings["interval_s"] + 10
        if busy or gap or not isinstance(last_active, (int, float)) or last_active > at:
            last_active = at
        sampled_at = at
        write_clock(
            {
                "version": VERSION,
                "interval_s": settings["interval_s"],
                "threshold_pct": settings["threshold_pct"],
                "limit_s": settings["limit_s"],
                "sampler_started_at": started_at,
                "sampled_at": at,
                "last_active_at": last_active,
                "busy": busy,
                "gpus": seen["gpus"],
                "sessions": len(seen["sessions"]),
                "tunnels": len([s for s in seen["sessions"] if s["kind"] == "tunnel"]),
                "tasks": seen["tasks"],
                "containers": seen["containers"],
                "shim_tunnels": shim_tunnels,
                "boot_id": boot_id(),
            }
        )
        time.sleep(settings["interval_s"])


def probe():
    settings = config()
    # This probe's own session is recognised by its command line, as the sampler recognises it. A bare session is
    # looked at again a moment later: still bare, it is a tunnel; another probe by then runs its command or is gone.
    shim_tunnels = (read_clock() or {}).get("shim_tunnels") or []
    at, seen, busy, _, bare = sample(settings, shim_tunnels, [])
    if bare:
        time.sleep(1.5)
        at, seen, busy, _, _ = sample(settings, shim_tunnels, bare)
    active = subprocess.run(["systemctl", "is-active", "--quiet", "targon-fleet-idle"]).returncode == 0
    print(
        json.dumps(
            {
                "version": VERSION,
                "now": at,
                "sampler_active": active,
                "hold_until": settings["hold_until"],
                "clock": read_clock(),
                "live": {"busy": busy, **seen},
            }
        )
    )


def check_loop():
    while True:
        settings = config()
        if settings["check"]:
            try:
                code = subprocess.run(["/bin/sh", "-c", settings["check"]], capture_output=True, timeout=max(10, settings["interval_s"])).returncode
            except subprocess.SubprocessError:
                code = -1
            tmp = CHECK + ".tmp"
            try:
                with open(tmp, "w") as f:
                    json.dump({"at": now(), "exit_code": code}, f)
                os.replace(tmp, CHECK)
            except OSError:
                # Not recorded: the verdict goes stale, which counts as activity.
                pass
        time.sleep(settings["interval_s"])


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    {"--probe": probe, "--check-loop": check_loop, "": sampler}[mode]()
