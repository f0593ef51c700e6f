/**
 * What `targon up` prints and tells, from its typed results: the dry run's plan, the VMs made, its warnings, the texts
 * of its notifications, the clean-up of a failed run and the lines of an exit without clean-up.
 */
import {type NotifyEvent, priceAndOwners} from '../../adapters/notify/notify.js'
import {formatDuration} from '../../core/input.js'
import {countOf, dash, deletionLines, oneLine, printable, renderTable, usd} from '../../core/output.js'
import {type TargonError, isTargonError} from '../../core/errors.js'
import type {UpNotice, UpWarning} from '../../workflows/up-announce/announce.js'
import type {UpPlanAsk} from '../../workflows/up/plan.js'
import type {UpPlan, UpResult} from '../../workflows/up/schema.js'
import {toTargonError} from '../base-command.js'
import type {NotifyFacts} from '../reporter.js'
import {stillBillingText} from './still-billing.js'
import {unguardedText} from './unguarded.js'

/** A human result: a table on stdout, then notes on stderr. */
export interface Printed {
  stdout: string
  stderr: string[]
}

/** One notification: its event, its text and its facts. */
export interface Notification {
  event: NotifyEvent
  text: string
  facts: NotifyFacts
}

/** up --dry-run: what each VM would be rented on, then the totals, the limits, and that nothing was made. */
export function planPrinted(plan: UpPlan): Printed {
  const {limits} = plan
  const seconds = (value: number | null) => (value === null ? 'none' : formatDuration(value * 1000))
  const table = renderTable(
    [
      {header: 'VM', value: (vm) => vm.name ?? `#${vm.index}`},
      {header: 'RESOURCE', value: (vm) => dash(vm.offer?.resource)},
      {header: 'GPU', value: (vm) => (vm.offer?.gpu_model ? `${vm.offer.gpu_count ?? '?'}x ${vm.offer.gpu_model}` : '-')},
      {align: 'right', header: 'USD_PER_H', value: (vm) => usd(vm.offer?.price_per_hour)},
      {align: 'right', header: 'CAP', value: () => usd(plan.max_price)},
    ],
    plan.vms,
  )
  return {
    stderr: [
      `would rent ${countOf(plan.count, 'VM')}${plan.min === null ? '' : ` (keeping at least ${plan.min})`} in ${plan.org}, fleet ${plan.fleet}, ${plan.owner === null ? 'no owner' : `owner ${plan.owner}`}: ${usd(plan.price_per_hour)} USD/h in all, under a cap of ${usd(plan.max_price)} USD/h per VM`,
      `limits: --timeout ${seconds(limits.timeout_seconds)}, --wait ${seconds(limits.wait_seconds)}, --ttl ${seconds(limits.ttl_seconds)}, --max-cost ${limits.max_cost_usd === null ? 'none' : `${usd(limits.max_cost_usd)} USD`}, --idle ${seconds(limits.idle_limit_seconds)}, --on-failure ${limits.on_failure}; ${limits.bootstrap ? (limits.shim ? 'bootstrap and dstack-shim' : 'bootstrap without the shim') : 'no bootstrap'}`,
      'dry run: nothing was created, registered or deployed',
    ],
    stdout: table,
  }
}

/** The VMs up made or adopted, and those whose shim dstack owns. */
export function resultPrinted(result: UpResult): Printed {
  const table = renderTable(
    [
      {header: 'NAME', value: (vm) => vm.name},
      {header: 'UID', value: (vm) => vm.uid},
      {header: 'RESOURCE', value: (vm) => vm.resource},
      {header: 'GPU', value: (vm) => (vm.gpu_model ? `${vm.gpu_count ?? '?'}x ${vm.gpu_model}` : '-')},
      {align: 'right', header: 'USD_PER_H', value: (vm) => usd(vm.price_per_hour)},
      {header: 'SSH', value: (vm) => (vm.public_ip ? `${vm.user}@${vm.public_ip} -p ${dash(vm.ssh_port)}` : '-')},
    ],
    result.vms,
  )
  const dstackManaged = result.vms.flatMap((vm) =>
    vm.dstack?.managed_by === 'dstack-managed'
      ? [
          `${vm.name}: dstack-managed (${oneLine(vm.dstack.dstack_sign ?? '')}): its shim, shim.env and unit were left as they are; --force-shim takes it back`,
        ]
      : [],
  )
  return {stderr: dstackManaged, stdout: table}
}

/** Adopting by --name without a price cap. */
export function noPriceCapWarning(name: string | undefined): string {
  return `no price cap: the price of ${name} is not checked against one`
}

export function upWarningText(warning: UpWarning): string {
  if (warning.kind === 'vm-failed') {
    const {failure} = warning
    return `${failure.name ?? 'a VM'} failed${warning.rolledBack ? ' and was rolled back' : ''}: ${failure.error.message}`
  }

  return unguardedText({
    limits: limitsOf(warning.ask),
    then: 'run targon guard install --team on an always-on machine (or targon guard install --cron here)',
    what: 'the VMs this run made',
  })
}

/** The limits a guard enforces that this run set. */
function limitsOf(ask: UpPlanAsk): string[] {
  return [
    ask.ttlMs !== undefined && '--ttl',
    ask.maxCostUsd !== undefined && '--max-cost',
    ask.bootstrap?.idle.limitMs !== undefined && '--idle',
  ].filter((limit) => limit !== false)
}

export function upNotification(notice: UpNotice): Notification {
  if (notice.kind === 'capacity-found')
    return {
      event: 'capacity-found',
      facts: {exitCode: 0, owner: notice.ask.owner, vms: []},
      text: `targon up: capacity found after waiting (${describe(notice.ask)})`,
    }
  if (notice.kind === 'failed') return failedNotification(notice.error, notice.owner)
  const {owner, result} = notice
  const names = result.vms.map((vm) => vm.name).join(', ')
  const billing = result.vms.map((vm) => ({owner, price_per_hour: vm.price_per_hour}))
  return {
    event: 'up-ready',
    facts: {exitCode: 0, owner, stillBilling: notice.stillBilling, vms: result.vms.map((vm) => ({name: vm.name, uid: vm.uid}))},
    text: `targon up: ${countOf(result.vms.length, 'VM')} ready in ${result.org}: ${names} (${priceAndOwners(billing)})`,
  }
}

/** A failed up: what it was, what was rolled back, and, above all, what still bills. */
function failedNotification(error: unknown, owner: string | null): Notification {
  const failure = toTargonError(error)
  const cleanup = failure.data?.cleanup as UpResult['cleanup'] | undefined
  const survivors = cleanup?.survivors ?? []
  const rolledBack = (cleanup?.results ?? []).filter((deleted) => deleted.billing === false).map((deleted) => deleted.uid)
  const interrupted = failure.code === 'INTERRUPTED'
  const text = [
    `targon up ${interrupted ? 'was interrupted' : 'failed'} (${failure.code}): ${failure.message}`,
    rolledBack.length > 0 ? `rolled back: ${rolledBack.join(', ')}` : undefined,
    survivors.length > 0
      ? stillBillingText({facts: survivors.map((uid) => ({owner, price_per_hour: priceOf(failure, uid)})), uids: survivors})
      : undefined,
  ]
    .filter(Boolean)
    .join('; ')
  return {
    event: interrupted && survivors.length > 0 ? 'interrupted-billing' : 'up-failed',
    facts: {
      exitCode: failure.exitCode,
      owner,
      stillBilling: survivors,
      vms: (cleanup?.results ?? []).map((deleted) => ({name: deleted.name, uid: deleted.uid})),
    },
    text,
  }
}

/** What a failed up deleted, for a person, before the error line (--json carries it in data.cleanup); none if nothing. */
export function cleanupNote(error: unknown): string | undefined {
  const cleanup = isTargonError(error) ? (error.data?.cleanup as UpResult['cleanup'] | undefined) : undefined
  if (!cleanup || cleanup.results.length === 0) return undefined
  return printable(
    `Clean-up:\n${deletionLines(cleanup.results)
      .map((line) => `  ${line}\n`)
      .join('')}`,
  )
}

/** What an exit without clean-up (a second Ctrl-C) leaves: the workloads this run got hold of. */
export function forcedExitLines(uids: readonly string[]): string[] {
  return uids.length > 0
    ? [`Exiting without clean-up. Still present: ${uids.join(' ')}`, `Delete with: targon down ${uids.join(' ')}`]
    : ['Exiting; nothing this run created is known to exist (run targon status to check).']
}

/** What up was asked for, for a person: the resource, else the GPU model. */
function describe(ask: UpPlanAsk): string {
  return ask.resource ?? (ask.gpu ? `a ${ask.gpu}` : 'the named VM')
}

/** A VM's hourly price as a failed run's data reports it; null when it does not. */
function priceOf(failure: TargonError, uid: string): number | null {
  const vms = (failure.data?.vms ?? []) as {uid: string; price_per_hour: number | null}[]
  return vms.find((vm) => vm.uid === uid)?.price_per_hour ?? null
}
