/** The idle sampler's settings on a VM (/etc/targon-fleet/idle.conf), written over SSH. */
import {type SshSession, shellQuote} from '../ssh/session.js'
import {must} from './remote-call.js'
import IDLE_SAMPLER from './idle-sampler.py'

/** What the idle sampler on the VM is told (/etc/targon-fleet/idle.conf, see idle-sampler.py); absent: as it was. */
export interface IdleSettings {
  interval_s: number
  /** A GPU at or above this utilisation (percent) is activity. */
  threshold_pct: number
  /** up --idle: the VM's own idle limit. */
  limit_s?: number
  /** up --idle-check: a command run as ubuntu every interval, exit 0 meaning idle; '' removes it. */
  check?: string
  /** up --idle-containers: a running container is activity. */
  containers?: boolean
}

/** The GPU utilisation at or above which a GPU counts as busy. */
export const IDLE_GPU_THRESHOLD_PCT = 10

/**
 * Tells the VM's idle sampler its settings: the interval and threshold always, the limit, check and containers only
 * when this run gives them (adopting a VM keeps what an earlier up set; an empty check removes it). The file is
 * replaced and the sampler restarted only when something changed; the unit that runs the user's check as ubuntu is
 * started or stopped to match.
 */
export async function configureIdle(session: SshSession, idle: IdleSettings): Promise<void> {
  const script = [
    'set -eu',
    // The services restarted below keep the usual umask (their check verdict is read by the sampler).
    'umask 022',
    'conf=/etc/targon-fleet/idle.conf',
    // The JSON on stdin, merged into what is there.
    `python3 -c ${shellQuote(MERGE_IDLE_CONF)} "$conf"`,
    // A check command may carry a token: 0640 root:targon-idle, read by the sampler's group and by ubuntu through sudo.
    'chown root:targon-idle "$conf.new"',
    'chmod 0640 "$conf.new"',
    `flag() { python3 -c 'import json,sys; print(1 if json.load(open(sys.argv[1])).get(sys.argv[2]) else 0)' "$conf.new" "$1"; }`,
    // Containers are listed through sudoers (bootstrap B11), never the docker group, which earlier versions joined. A
    // running sampler keeps the groups it started with: taken out of docker, it is restarted to drop it.
    'dropped=0',
    'if gpasswd -d targon-idle docker >/dev/null 2>&1; then dropped=1; fi',
    `check=$(flag check)`,
    `if cmp -s "$conf.new" "$conf"; then rm -f "$conf.new"; chown root:targon-idle "$conf"; chmod 0640 "$conf"; if [ "$dropped" = 1 ]; then systemctl restart targon-fleet-idle; fi; else mv -f "$conf.new" "$conf"; systemctl restart targon-fleet-idle; fi`,
    `if [ "$check" = 1 ]; then systemctl enable targon-fleet-idle-check; systemctl restart targon-fleet-idle-check; else systemctl disable --now targon-fleet-idle-check >/dev/null 2>&1 || true; fi`,
  ].join('\n')
  await must(session, `sudo -n sh -c ${shellQuote(script)}`, 'configuring the idle sampler', `${JSON.stringify(idle)}\n`)
}

/** Merges the JSON object on stdin into the config file (argument 1), written next to it as .new. */
const MERGE_IDLE_CONF = [
  'import json, sys',
  'path = sys.argv[1]',
  'try:',
  '    current = json.load(open(path))',
  '    current = current if isinstance(current, dict) else {}',
  'except Exception:',
  '    current = {}',
  'current.update(json.load(sys.stdin))',
  'json.dump(current, open(path + ".new", "w"), sort_keys=True)',
].join('\n')

const SAMPLER_PATH = '/usr/local/lib/targon-fleet/idle-sampler.py'

/**
 * Brings the idle sampler of a VM bootstrapped by an earlier version up to this one's (as the bootstrap's step B11
 * would on --reinstall), so that what this version counts as activity (a running job) keeps its VM. Nothing on a VM
 * without a sampler (never bootstrapped: it has no idle clock to keep).
 */
export async function updateIdleSampler(session: SshSession): Promise<'absent' | 'current' | 'updated'> {
  // Compared first without sudo (the sampler is world-readable), which costs the VM less on each run of a job.
  const compared = await must(
    session,
    `f=${SAMPLER_PATH}; [ -f "$f" ] || { echo absent; exit 0; }; cmp -s - "$f" && echo current || echo differs`,
    'comparing the idle sampler',
    `${IDLE_SAMPLER.trimEnd()}\n`,
  )
  const found = compared.trim()
  if (found === 'absent' || found === 'current') return found
  const script = [
    `f=${SAMPLER_PATH}`,
    '[ -f "$f" ] || { echo absent; exit 0; }',
    'cat >"$f.new"',
    'if cmp -s "$f.new" "$f"; then rm -f "$f.new"; echo current; exit 0; fi',
    'chmod 0755 "$f.new" && mv -f "$f.new" "$f" && systemctl restart targon-fleet-idle && echo updated',
  ].join('\n')
  const answer = await must(session, `sudo -n sh -c ${shellQuote(script)}`, 'updating the idle sampler', `${IDLE_SAMPLER.trimEnd()}\n`)
  const state = answer.trim()
  return state === 'absent' || state === 'current' ? state : 'updated'
}
