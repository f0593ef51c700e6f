/**
 * A job on a VM: its id, where its files live, the shell text that starts it as a transient systemd unit, and how its
 * state is read back. Everything read back from a VM is untrusted: ids are checked against their form, records are
 * parsed with bounds, and nothing from the VM becomes a path or a shell word unchecked.
 *
 * Layout on the VM (outside the synced tree, so that a sync never touches it):
 *   /home/ubuntu/.targon/jobs/<id>/run.sh      the command in a login shell, writing exit_code when it ends
 *   /home/ubuntu/.targon/jobs/<id>/job.json    what was started (JobRecord)
 *   /home/ubuntu/.targon/jobs/<id>/log         stdout and stderr of the command
 *   /home/ubuntu/.targon/jobs/<id>/exit_code   its exit code, once it ended by itself
 *   /home/ubuntu/.targon/jobs/<id>/cancelled   written by a cancel before the unit is stopped
 */
import {createHash, randomBytes} from 'node:crypto'
import {posix} from 'node:path'
import * as z from 'zod'

import {TargonError, usageError} from '../../core/errors.js'
import {JOB_ID_PATTERN} from '../../core/input.js'
import {shellQuote} from '../../adapters/ssh/session.js'
import type {JobState} from './schema.js'

export const JOBS_DIR = '/home/ubuntu/.targon/jobs'
export const WORK_ROOT = '/home/ubuntu/targon/work'
export const SYNC_MANIFESTS = '/home/ubuntu/.targon/sync'

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
/** The longest command line a job takes (it is written into the job's files and its record). */
const MAX_COMMAND_CHARS = 64 * 1024
/** What a job's record may take on the VM: the longest command, escaped, and the rest. */
const MAX_RECORD_BYTES = 4 * MAX_COMMAND_CHARS

export function newJobId(now: number, random: Buffer = randomBytes(3)): string {
  const stamp = new Date(now).toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
  return `j-${stamp}-${random.toString('hex')}`
}

export function isJobId(text: string): boolean {
  return JOB_ID_PATTERN.test(text)
}

/** A job id typed by a user: one of this form, else NOT_FOUND (no job can have it). */
export function checkJobId(text: string): string {
  if (!isJobId(text))
    throw new TargonError('NOT_FOUND', `no job ${JSON.stringify(text.slice(0, 80))}: job ids look like j-20261202-030527-a1b2c3`, {
      hint: 'targon jobs lists them',
    })
  return text
}

export function unitOf(id: string): string {
  return `targon-job-${id}`
}

export function jobDir(id: string): string {
  return posix.join(JOBS_DIR, id)
}

/** The directory on the VM for a local working directory: the same for every job from it, named by a hash. */
export function workdirIdOf(localDir: string): string {
  return createHash('sha256').update(localDir).digest('hex').slice(0, 16)
}

/** An --out path: relative to the job's directory and inside it (no absolute path, no ".."), normalized. */
export function checkOutPath(path: string): string {
  const refuse = (why: string) =>
    usageError(`--out ${JSON.stringify(path)}: ${why}`, "name a path inside the job's directory, e.g. --out results")
  if (path === '' || path.includes('\0')) throw refuse('an empty path')
  if (path.startsWith('/')) throw refuse("an absolute path; --out paths are relative to the job's directory")
  const parts = path.split('/').filter((part) => part !== '' && part !== '.')
  if (parts.includes('..')) throw refuse('".." would leave the job\'s directory')
  if (parts.length === 0) throw refuse("the job's directory itself; name what it holds")
  return parts.join('/')
}

/** --env K=V: a shell variable name and a value. */
export function parseEnv(assignment: string): {name: string; value: string} {
  const at = assignment.indexOf('=')
  const name = at < 0 ? assignment : assignment.slice(0, at)
  if (at < 0 || !ENV_NAME.test(name) || assignment.includes('\0'))
    throw usageError(`--env ${JSON.stringify(name)}: not NAME=VALUE with a shell variable name`, 'e.g. --env EPOCHS=3')
  return {name, value: assignment.slice(at + 1)}
}

export function checkCommand(command: string): string {
  if (command.trim() === '') throw usageError('no command given', "targon run VM -- <command>, e.g. targon run gpu1 -- 'python train.py'")
  if (command.length > MAX_COMMAND_CHARS || command.includes('\0'))
    throw usageError(`the command is longer than ${MAX_COMMAND_CHARS / 1024} KiB`, 'put it in a script in the working directory')
  return command
}

export const JobRecordSchema = z.object({
  id: z.string().regex(JOB_ID_PATTERN),
  command: z.string().max(MAX_COMMAND_CHARS),
  workdir: z.string().max(4096),
  started_at: z.string().max(64),
  down: z.boolean(),
  out: z.array(z.string().max(4096)).max(256),
})
export type JobRecord = z.infer<typeof JobRecordSchema>

/**
 * The shell text (for ubuntu's login shell, as exec runs it) that writes the job's files and starts its unit; run.sh
 * goes on stdin. The unit is collected when it ends: its state is read from the job's files, not from systemd.
 */
export function startScript(record: JobRecord): string {
  const dir = jobDir(record.id)
  const q = shellQuote
  return [
    'set -e',
    `mkdir -p ${q(record.workdir)}`,
    // The job's own files are its user's alone (its log may hold secrets); the unit is started outside this umask.
    `(umask 077 && mkdir -p ${q(dir)} && cat >${q(`${dir}/run.sh`)} && printf '%s\\n' ${q(JSON.stringify(record))} >${q(`${dir}/job.json`)} && : >${q(`${dir}/log`)})`,
    `sudo -n systemd-run --unit=${unitOf(record.id)} --uid=ubuntu --collect -p WorkingDirectory=${q(record.workdir)} -p StandardOutput=append:${q(`${dir}/log`)} -p StandardError=append:${q(`${dir}/log`)} /bin/bash --login ${q(`${dir}/run.sh`)}`,
  ].join('\n')
}

/** run.sh: the --env values (quoted), the command as the remote shell reads it, then its exit code beside the log. */
export function commandScript(record: JobRecord, env: {name: string; value: string}[]): string {
  const dir = jobDir(record.id)
  return [
    `# targon job ${record.id}`,
    ...env.map((each) => `export ${each.name}=${shellQuote(each.value)}`),
    `/bin/bash -c ${shellQuote(record.command)}`,
    'code=$?',
    `printf '%s\\n' "$code" >${shellQuote(`${dir}/exit_code.tmp`)} && mv -f ${shellQuote(`${dir}/exit_code.tmp`)} ${shellQuote(`${dir}/exit_code`)}`,
    'exit "$code"',
    '',
  ].join('\n')
}

export interface EndState {
  state: JobState
  exit_code: number | null
}

/**
 * A shell function: `job_state ID` prints one line, running, exit N, cancelled or lost (a job whose exit code is
 * written has ended, though its unit may still be winding down for a moment; the exit code is looked for again once
 * the unit is seen stopped, as it may have been written in between); `job_ended ID` prints when it ended
 * (epoch seconds: its exit code's file, else its cancel mark, else its log), or - while it runs.
 */
export const JOB_STATE_FUNCTIONS = [
  `job_exit() { [ -f "${JOBS_DIR}/$1/exit_code" ] && echo "exit $(head -c 16 "${JOBS_DIR}/$1/exit_code")"; }`,
  `job_state() { job_exit "$1" || { systemctl is-active --quiet "targon-job-$1" && echo running; } || job_exit "$1" || { [ -f "${JOBS_DIR}/$1/cancelled" ] && echo cancelled; } || echo lost; }`,
  `job_ended() { for f in exit_code cancelled log; do if [ -f "${JOBS_DIR}/$1/$f" ]; then stat -c %Y "${JOBS_DIR}/$1/$f"; return; fi; done; echo -; }`,
].join('\n')

/** Shell text that prints one line: running, exit N, cancelled or lost. */
export function stateScript(id: string): string {
  return `${JOB_STATE_FUNCTIONS}\njob_state ${shellQuote(id)}`
}

/** What a listing prints of job records, newest first: the older jobs are listed by id, state and --down alone. */
export const LISTED_RECORD_BYTES = 2 * 1024 * 1024
/** Jobs listed by id alone, after the records: past them, the VM is said to have more. */
export const MAX_LEFT_OUT = 20_000

/**
 * Shell text that prints each job on the VM (only `id` when given), newest first: a line "@@job <dir name>", its
 * state, when it ended, and its record in base64, each record cut at its bound, while the records printed stay within
 * LISTED_RECORD_BYTES; after that, "@@left <dir name>", its state, and "down" when its record says --down (or "-"),
 * MAX_LEFT_OUT of them at most, then "@@more". The directory names are the VM's: checked on reading.
 */
export function listScript(id?: string): string {
  return [
    JOB_STATE_FUNCTIONS,
    `cd ${JOBS_DIR} 2>/dev/null || exit 0`,
    `budget=${LISTED_RECORD_BYTES}; left=0`,
    `${id === undefined ? 'ls -1d j-* 2>/dev/null | sort -r' : `printf '%s\\n' ${shellQuote(id)}`} | while IFS= read -r d; do`,
    '  [ -f "$d/job.json" ] || continue',
    '  state=$(job_state "$d")',
    '  size=$(stat -c %s "$d/job.json" 2>/dev/null || echo 0)',
    '  if [ "$size" -le "$budget" ]; then',
    '    budget=$((budget - size))',
    '    [ "$state" = running ] && ended=- || ended=$(job_ended "$d")',
    '    printf \'@@job %s\\n%s\\n%s\\n\' "$d" "$state" "$ended"',
    `    head -c ${MAX_RECORD_BYTES} "$d/job.json" | base64 -w0`,
    '    echo',
    '  else',
    '    budget=0; left=$((left + 1))',
    `    [ "$left" -gt ${MAX_LEFT_OUT} ] && { echo @@more; break; }`,
    '    grep -q \'"down":true\' "$d/job.json" && down=down || down=-',
    '    printf \'@@left %s\\n%s\\n%s\\n\' "$d" "$state" "$down"',
    '  fi',
    'done',
  ].join('\n')
}

/** A job the listing names without its record (past LISTED_RECORD_BYTES): whether it runs, and whether it is --down. */
export interface LeftOutJob {
  id: string
  running: boolean
  down: boolean
}

export interface ListedJob extends EndState {
  record: JobRecord
  /** Epoch ms; null while it runs or when unknown. */
  endedAt: number | null
}

/**
 * What listScript printed: the jobs whose id, state and record pass the checks; the others as problems; the jobs
 * listed without their record; and whether the VM has more than even those.
 */
export function parseListing(text: string): {jobs: ListedJob[]; problems: string[]; leftOut: LeftOutJob[]; more: boolean} {
  const jobs: ListedJob[] = []
  const problems: string[] = []
  const leftOut: LeftOutJob[] = []
  let more = false
  for (const block of text.split(/^@@/m).slice(1)) {
    const [head = '', stateLine = '', third = '', encoded = ''] = block.split('\n')
    if (head === 'more') {
      more = true
      continue
    }

    const [kind, dirName = ''] = head.split(/ (.*)/s)
    if ((kind !== 'job' && kind !== 'left') || !isJobId(dirName)) {
      problems.push(`a job directory with a name no job has: ${JSON.stringify(dirName.slice(0, 80))}`)
      continue
    }

    const state = parseState(stateLine)
    if (kind === 'left') {
      if (state) leftOut.push({down: third === 'down', id: dirName, running: state.state === 'running'})
      else problems.push(`job ${dirName}: its state is unreadable`)
      continue
    }

    let record: JobRecord | undefined
    try {
      const parsed = JobRecordSchema.safeParse(JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')))
      record = parsed.success && parsed.data.id === dirName ? parsed.data : undefined
    } catch {
      record = undefined
    }

    if (!state || !record) {
      problems.push(`job ${dirName}: its ${state ? 'record' : 'state'} is unreadable`)
      continue
    }

    const endedS = Number(third)
    jobs.push({...state, endedAt: third !== '-' && Number.isFinite(endedS) && endedS > 0 ? endedS * 1000 : null, record})
  }

  return {jobs, leftOut, more, problems}
}

/** The line stateScript printed; undefined when it is not one of its forms. */
export function parseState(line: string): EndState | undefined {
  const text = line.trim()
  if (text === 'running' || text === 'cancelled' || text === 'lost') return {exit_code: null, state: text}
  const exit = /^exit (\d{1,3})$/.exec(text)
  const code = Number(exit?.[1])
  if (!exit || code > 255) return undefined
  return {exit_code: code, state: code === 0 ? 'succeeded' : 'failed'}
}

/** For an exit code above 128: the signal that probably ended the command (bash exits 128 + its number). */
export function signalName(number: number): string | null {
  const names: Record<string, number> = {SIGABRT: 6, SIGBUS: 7, SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGQUIT: 3, SIGSEGV: 11, SIGTERM: 15}
  return Object.entries(names).find(([, value]) => value === number)?.[0] ?? null
}
