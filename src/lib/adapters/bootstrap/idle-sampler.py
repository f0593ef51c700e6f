#!/usr/bin/python3
# targon-fleet idle sampler: keeps the VM's idle clock in /var/lib/targon-fleet/idle.json.
#
# Installed by the bootstrap (step B11) as the systemd service targon-fleet-idle, run as the unprivileged system user
# targon-idle. Every interval it samples what counts as activity and records when activity was last seen, on the
# VM's own clock, so that every run of `targon status --usage` and `targon down --idle` reads the same clock:
#   - a GPU at or above the utilisation threshold (nvidia-smi);
#   - an SSH session or port-forward, except a session that forwards to the dstack shim's port (the dstack server's
#     own tunnel) and targon's own probes (their remote command is this script with --probe);
#   - a dstack task that is not terminated (the shim's API on 127.0.0.1:10998), and a task list that cannot be read;
#   - a job of `targon run` that runs (its systemd unit targon-job-<id> is active);
#   - with "containers", a running container; with "check", the verdict of the user's idle check (run as ubuntu by
#     targon-fleet-idle-check.service: exit 0 means idle).
# Modes: (none) the sampler loop; --probe prints one live sample with the clock, as JSON, for targon's probe;
# --check-loop runs the user's check every interval (as ubuntu) and records its verdict; --tasks-at-work says whether
# a dstack task is at work (the bootstrap asks before it restarts Docker).
import json
import os
import pwd
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

# 4: reads the shim's task list in both of its shapes (see parse_task_list); 3 and older read the old one only.
VERSION = "5"
CONFIG = "/etc/targon-fleet/idle.conf"
# A test aid: seconds added to this VM's clock (a skewed clock), read on every sample.
CLOCK_OFFSET = "/etc/targon-fleet/clock-offset"
STATE_DIR = "/var/lib/targon-fleet"
CLOCK = STATE_DIR + "/idle.json"
# Written by the check loop (as ubuntu), in a directory of its own.
CHECK = STATE_DIR + "/check/verdict.json"
SHIM = "http://127.0.0.1:10998"
# Installed by the bootstrap (B12) with the rule that lets only root and ubuntu reach the shim; the sampler then reads
# the shim through shim-get and its sudo rule.
SHIM_ACCESS = "/usr/local/lib/targon-fleet/shim-access"
SHIM_GET = "/usr/local/lib/targon-fleet/shim-get"
SHIM_PORT = 10998
PROBE_MARK = "idle-sampler.py --probe"
# targon's own reads and writes of the limits file the VM carries (a guard's, a status's): no user's activity either.
LIMITS_MARK = "/etc/targon-fleet/limits.json"
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
        if any(mark in table[child][1] for child in descendants(pid) if child in table for mark in (PROBE_MARK, LIMITS_MARK)):
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


# The shim's task statuses (dstackai/dstack runner/internal/shim/task.go at 0.21.2); any other word reads as "unknown".
TASK_STATUSES = ("pending", "preparing", "pulling", "creating", "running", "terminated")
TASK_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
# At most this many tasks are recorded, and read one by one from a shim that lists ids only.
MAX_TASKS = 64
# What one answer of the shim may hold; more is not an answer the shim gives.
SHIM_ANSWER_BYTES = 256 * 1024
# A proxy from the environment (ubuntu's login shell runs the probe) must never see the shim's loopback address.
SHIM_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def shim_get(path):
    """One GET of the shim's API on loopback, parsed; an answer over the size bound or not JSON raises."""
    with SHIM_OPENER.open(SHIM + path, timeout=10) as answer:
        body = answer.read(SHIM_ANSWER_BYTES + 1)
    if len(body) > SHIM_ANSWER_BYTES:
        raise ValueError("more than %d KiB" % (SHIM_ANSWER_BYTES // 1024))
    return json.loads(body)


def task_entry(item):
    """One task as the shim describes it ({"id", "status", ...}), or None when it cannot be read."""
    if not isinstance(item, dict):
        return None
    task_id, status = item.get("id"), item.get("status")
    if not isinstance(task_id, str) or not TASK_ID.fullmatch(task_id) or not isinstance(status, str):
        return None
    return {"id": task_id, "status": status if status in TASK_STATUSES else "unknown"}


def parse_task_list(answer, read_task):
    """
    The shim's answer to GET /api/tasks as (tasks, None), or (None, why) when it cannot be read. Since 0.19.26 the shim
    lists each task with its status: {"tasks": [{"id", "status"}]} (TaskListResponse in runner/internal/shim/api/
    schemas.go); before, it listed ids only ({"ids": [...]}) and each task is read with read_task(id), which returns
    GET /api/tasks/{id} parsed. Anything else is unknown, never "no tasks".
    """
    if isinstance(answer, dict) and isinstance(answer.get("tasks"), list):
        found = [task_entry(item) for item in answer["tasks"]]
        if None in found:
            return None, "a task in the shim's list has no readable id and status"
        return found, None
    if isinstance(answer, dict) and isinstance(answer.get("ids"), list):
        ids = answer["ids"]
        if len(ids) > MAX_TASKS:
            return None, "the shim lists %d task ids, more than %d can be read" % (len(ids), MAX_TASKS)
        if not all(isinstance(task_id, str) and TASK_ID.fullmatch(task_id) for task_id in ids):
            return None, "a task id in the shim's list is not one"
        found = []
        for task_id in ids:
            try:
                entry = task_entry(read_task(task_id))
            except Exception:
                entry = None
            # Gone between the list and the read, or unreadable: not known to be terminated.
            found.append(entry if entry is not None and entry["id"] == task_id else {"id": task_id, "status": "unknown"})
        return found, None
    return None, "the shim's task list has neither tasks nor ids"


def tasks():
    """
    The shim's tasks as (tasks, None): [] when no shim listens (nothing can run a task); (None, why) when it answers but
    cannot be read. Where the bootstrap let only root and ubuntu reach the shim (SHIM_ACCESS), any other user (the
    sampler's targon-idle) reads them through shim-get and its sudo rule.
    """
    if os.path.exists(SHIM_ACCESS) and os.geteuid() != 0 and not is_ubuntu():
        return read_tasks(shim_get_through_sudo)
    return read_tasks(shim_get)


def is_ubuntu():
    try:
        return pwd.getpwuid(os.geteuid()).pw_name == "ubuntu"
    except KeyError:
        return False


class ShimAnswered(Exception):
    """The shim answered with an HTTP status other than 200."""

    def __init__(self, status):
        super().__init__("HTTP %d" % status)
        self.status = status


def shim_get_through_sudo(path):
    """One GET of the shim through shim-get (the bootstrap's, B12) and the sampler's sudo rule, parsed."""
    try:
        done = subprocess.run(["sudo", "-n", SHIM_GET, path], capture_output=True, timeout=15)
    except (OSError, subprocess.SubprocessError):
        raise OSError("shim-get could not run")
    if done.returncode == 7:
        raise ConnectionRefusedError()
    if done.returncode != 0:
        raise OSError("shim-get exited %d" % done.returncode)
    head, _, body = done.stdout.partition(b"\r\n\r\n")
    status = re.match(rb"HTTP/1\.[01] (\d{3}) ", head)
    if not status:
        raise OSError("not an HTTP answer")
    if int(status.group(1)) != 200:
        raise ShimAnswered(int(status.group(1)))
    if len(body) > SHIM_ANSWER_BYTES:
        raise ValueError("more than %d KiB" % (SHIM_ANSWER_BYTES // 1024))
    return json.loads(body)


def read_tasks(get):
    """The shim's tasks through `get` (a GET of a path, parsed), as tasks() gives them."""
    try:
        answer = get("/api/tasks")
    except urllib.error.HTTPError as error:
        return None, "the shim answered HTTP %d to its task list" % error.code
    except ShimAnswered as error:
        return None, "the shim answered HTTP %d to its task list" % error.status
    except urllib.error.URLError as error:
        if isinstance(error.reason, ConnectionRefusedError):
            return [], None
        return None, "the shim's task list could not be read"
    except ConnectionRefusedError:
        return [], None
    except ValueError:
        return None, "the shim's task list is not JSON of at most %d KiB" % (SHIM_ANSWER_BYTES // 1024)
    except Exception:
        return None, "the shim's task list could not be read"
    found, why = parse_task_list(answer, lambda task_id: get("/api/tasks/" + task_id))
    if found is None:
        return None, why
    # The tasks still at work first, so that a long list of ended ones never hides one.
    return sorted(found, key=lambda task: task["status"] == "terminated")[:MAX_TASKS], None


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
    found_tasks, tasks_unknown = tasks()
    seen = {
        "gpus": gpus(),
        "sessions": active_sessions,
        "tasks": found_tasks,
        "containers": containers() if settings["containers"] else None,
        "jobs": jobs(),
    }
    busy = []
    for gpu in seen["gpus"] or []:
        if gpu["util_pct"] >= settings["threshold_pct"]:
            busy.append("gpu %d at %d %%" % (gpu["index"], gpu["util_pct"]))
    for session in active_sessions:
        busy.append("ssh %s" % session["kind"])
    at_work = [task for task in seen["tasks"] or [] if task["status"] != "terminated"]
    for task in at_work[:8]:
        busy.append("dstack task %s %s" % (task["id"], task["status"]))
    if len(at_work) > 8:
        busy.append("%d more dstack tasks not terminated" % (len(at_work) - 8))
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
        busy.append("dstack tasks unknown: %s" % tasks_unknown)
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


def tasks_at_work():
    """
    For the bootstrap (run as root, the source on stdin): prints each dstack task that is not terminated, or why the
    list is unknown, and exits 0 when there is one or it is unknown; 1 when no task is at work. Docker and the shim are
    never restarted under a task (dstack's own rule for its upgrades).
    """
    found, why = tasks()
    if found is None:
        print("unknown: %s" % why)
        sys.exit(0)
    at_work = ["%s %s" % (task["id"], task["status"]) for task in found if task["status"] != "terminated"]
    print(", ".join(at_work))
    sys.exit(0 if at_work else 1)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    {"--probe": probe, "--check-loop": check_loop, "--tasks-at-work": tasks_at_work, "": sampler}[mode]()
