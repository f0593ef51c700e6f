/** What `targon run` prints: the dry run's plan (a table on stdout, the sums on stderr) and the line of a started job. */
import {countOf, renderTable} from '../../core/output.js'
import {formatBytes} from '../../workflows/copy/budget.js'
import {type RunPlace, laterCommand} from '../../workflows/later-command.js'
import type {Job, JobPlan} from '../../workflows/job/schema.js'

/** run --dry-run: each file the sync would look at and each path it holds back, why (stdout), then the sums (stderr). */
export function dryRunLines(plan: JobPlan, gpu: string | undefined): {table: string | null; notes: string[]} {
  const {sync} = plan
  const then = [`then run on ${plan.vm ?? `a VM with --gpu ${gpu}`}: ${plan.command}`, 'dry run: nothing was rented, connected to or sent']
  if (!sync) return {notes: ['would not sync (--no-sync)', ...then], table: null}
  const rows = [
    ...sync.files.map((file) => ({bytes: String(file.bytes), path: file.path, reason: '-', sync: 'send'})),
    ...sync.held_back.map((held) => ({bytes: '-', path: held.path, reason: held.reason, sync: 'hold'})),
  ]
  const table = renderTable(
    [
      {header: 'SYNC', value: (row) => row.sync},
      {header: 'PATH', value: (row) => row.path},
      {align: 'right', header: 'BYTES', value: (row) => row.bytes},
      {header: 'REASON', value: (row) => row.reason},
    ],
    rows,
  )
  const sums = `would sync ${countOf(sync.files.length, 'file')} (${formatBytes(sync.bytes)}; only what changed is sent) from ${sync.local_dir} to ${sync.remote_dir}, holding back ${sync.held_back.length}`
  return {notes: [sums, ...then], table}
}

/** "Job j-… started on gpu1", and for a detached job the commands that follow it and wait for it. */
export function jobStartedLine(job: Job, vm: {name: string | null; uid: string}, detach: boolean, place: RunPlace): string {
  const later = detach
    ? `: ${laterCommand(['jobs', 'logs', job.id, '-f'], place)} follows it, ${laterCommand(['jobs', 'wait', job.id], place)} waits for it and fetches its outputs`
    : ''
  return `Job ${job.id} started on ${vm.name ?? vm.uid}${later}`
}
