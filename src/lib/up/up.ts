/**
 * `targon up` end to end: choose offers under the cap, resolve org, image and SSH key,
 * provision N VMs in parallel, and settle the fleet (all-or-nothing, or at least --min).
 */

import type {TargonClient} from '../targon/client.js'
import {MAX_MUTATIONS_IN_FLIGHT} from '../targon/http.js'
import {INSTALL_STEPS, SHIM_STEPS, type StepEvent, type Substep} from '../bootstrap/runner.js'
import {TargonError, asTargonError} from '../shell/errors.js'
import {filterOffers, matchesGpu, normalizeOffer, sortOffers} from '../offers/offers.js'
import {abortAfter} from '../shell/interrupt.js'
import {resolveOrg} from '../settings/org.js'
import {formatDuration} from '../shell/input.js'
import {countOf} from '../shell/output.js'
import {runPhases} from '../shell/progress.js'
import {Provisioner, type VmRun, newVmRun} from './provision.js'
import {LocalState} from '../state/local-state.js'
import {mapBounded} from '../deletion/delete-workloads.js'
import {ensureKeyRegistered, ensureProjectKey} from '../ssh/project-key.js'
import {VERSION} from '../shell/version.js'
import {type Cleanup, type DeleteResult, type Offer, type OnFailure, type PhaseName, PHASES, type UpResult} from '../contract.js'

export const DEFAULT_IMAGE = 'ubuntu-24-04-lts-595'




export interface UpOptions {
  resource?: string
  gpu?: string
  minGpus?: number
  maxPrice: number
  count: number
  min?: number
  fleet: string
  label?: string
  image: string
  timeoutMs: number
  ttlMs?: number
  onFailure: OnFailure
  org?: string
  configDir: string
  /** null with --no-bootstrap. */
  bootstrap: {dstackVersion: string; reinstall: boolean; gpuTest: boolean; shim: boolean} | null
  json: boolean
  signal: AbortSignal
  warn: (message: string) => void
  /** Lets the signal handler name what this run has created so far. */
  track: (vms: VmRun[]) => void
}

/** Offers that may be rented: matching, available, under the cap, cheapest first. */
export function chooseCandidates(offers: Offer[], options: Pick<UpOptions, 'gpu' | 'maxPrice' | 'minGpus' | 'resource'>): Offer[] {
  const matching = offers.filter((offer) => (options.resource ? offer.resource === options.resource : true) && (options.gpu ? matchesGpu(offer, options.gpu) : true) && (options.minGpus === undefined || (offer.gpu_count ?? 0) >= options.minGpus))
  const candidates = sortOffers(filterOffers(matching, {maxPrice: options.maxPrice}))
  if (candidates.length > 0) return candidates

  const what = options.resource ?? (options.gpu ? `${options.gpu} GPUs` : 'GPU VMs')
  if (matching.length === 0) {
    throw new TargonError('NOT_FOUND', `no offer matches ${what}`, {hint: 'see targon offers --all for the resources and GPU models on offer'})
  }

  const cheapest = sortOffers(matching).find((offer) => offer.available === null || offer.available > 0)
  if (!cheapest) throw new TargonError('NO_CAPACITY', `every offer for ${what} is sold out`, {hint: 'try again later, or see targon offers for other GPUs'})
  throw new TargonError('PRICE_CAP_EXCEEDED', `no offer for ${what} at or under ${options.maxPrice.toFixed(2)} USD/h; the cheapest is ${cheapest.resource} at ${cheapest.price_per_hour.toFixed(2)} USD/h`, {
    details: {cheapest: {price_per_hour: cheapest.price_per_hour, resource: cheapest.resource}},
    hint: `raise --max-price to ${cheapest.price_per_hour} or more, or pick another GPU`,
  })
}

/** The image by exact name; for the default, a unique Ubuntu 24.04 image if the exact one is missing. */
export async function resolveImage(client: TargonClient, org: string, wanted: string): Promise<string> {
  const names = (await client.listVmImages(org)).map((image) => image.name)
  if (names.includes(wanted)) return wanted
  if (wanted === DEFAULT_IMAGE) {
    const ubuntu = names.filter((name) => /ubuntu.*24.*04/i.test(name))
    if (ubuntu.length === 1) return ubuntu[0] as string
  }

  throw new TargonError('USAGE', `image "${wanted}" is not offered`, {details: {images: names}, hint: `use --image with one of: ${names.join(', ')}`})
}

export async function runUp(client: TargonClient, options: UpOptions): Promise<UpResult> {
  // --timeout bounds every request and wait of the run's own work (a server that never answers included), and
  // ends it like an interrupt, as TIMEOUT. Clean-up runs on a client without this signal, with its own budget.
  const deadline = abortAfter(options.timeoutMs, () => new TargonError('TIMEOUT', `targon up did not finish within --timeout ${formatDuration(options.timeoutMs)}`, {hint: 'raise --timeout, or check the network'}))
  try {
    const signal = AbortSignal.any([options.signal, deadline.signal])
    return await provisionFleet({cleanupClient: client.withSignal(undefined), client: client.withSignal(signal), signal}, options)
  } finally {
    deadline.dispose()
  }
}

/** The run itself: `client` and `signal` obey Ctrl-C and the deadline, `cleanupClient` neither. */
async function provisionFleet({cleanupClient, client, signal}: {client: TargonClient; cleanupClient: TargonClient; signal: AbortSignal}, options: UpOptions): Promise<UpResult> {
  const inventory = await client.inventory()
  const offers = inventory.offers.map((raw) => normalizeOffer(raw, options.maxPrice))
  // With --name the VM may already exist; a missing offer only matters once something must be created.
  let candidates: Offer[] = []
  let noCandidates: TargonError | undefined
  try {
    candidates = chooseCandidates(offers, options)
  } catch (error) {
    if (options.label === undefined || !(error instanceof TargonError)) throw error
    noCandidates = error
  }

  const org = await resolveOrg(client, options.org)
  const image = await resolveImage(client, org, options.image)
  const state = new LocalState(options.configDir)
  const key = await ensureProjectKey(options.configDir)
  const sshKeyUid = await ensureKeyRegistered(client, org, state, key)

  const provisioner = new Provisioner(
    {cleanupClient, client, signal, state, warn: options.warn},
    {
      bootstrap: options.bootstrap && {
        params: {dstackVersion: options.bootstrap.dstackVersion, gpuTest: options.bootstrap.gpuTest, reinstall: options.bootstrap.reinstall, toolVersion: VERSION},
        shim: options.bootstrap.shim,
      },
      configDir: options.configDir,
      deadline: Date.now() + options.timeoutMs,
      fleet: options.fleet, identityFile: key.privateKeyPath, image, label: options.label, maxPrice: options.maxPrice, onFailure: options.onFailure, org, resource: options.resource, sshKeyUid, ttlMs: options.ttlMs},
    candidates,
    noCandidates,
  )
  const vms = Array.from({length: options.count}, (_, index) => newVmRun(index))
  options.track(vms)
  const errors = new Map<VmRun, unknown>()
  const work: Record<PhaseName, (vm: VmRun, onEvent: (event: StepEvent) => void) => Promise<void>> = {
    deploy: (vm) => provisioner.deploy(vm),
    install: (vm, onEvent) => provisioner.install(vm, onEvent),
    register: (vm) => provisioner.register(vm),
    'shim-start': (vm, onEvent) => provisioner.shimStart(vm, onEvent),
    'wait-running': (vm) => provisioner.waitRunning(vm),
  }
  const substeps: Partial<Record<PhaseName, Substep[]>> = {install: INSTALL_STEPS, 'shim-start': SHIM_STEPS}
  const phases = PHASES.filter((phase) => (phase === 'install' ? options.bootstrap !== null : phase === 'shim-start' ? options.bootstrap?.shim === true : true))

  await runPhases(
    vms,
    phases.map((phase) => ({run: (vm: VmRun, onEvent: (event: StepEvent) => void) => provisioner.phase(vm, phase, () => work[phase](vm, onEvent)), substeps: substeps[phase], title: phase})),
    {
      concurrency: Math.min(options.count, 16),
      onFailure: (vm, error) => errors.set(vm, error),
      silent: options.json,
      vmTitle: (vm) => vm.name ?? `VM ${vm.index + 1}`,
    },
  )

  try {
    return await settle(provisioner, vms, errors, options, org, key.privateKeyPath)
  } finally {
    for (const vm of vms) provisioner.closeSsh(vm)
  }
}

/** Keeps the fleet, or rolls it back per --on-failure when it fell short. */
async function settle(provisioner: Provisioner, vms: VmRun[], errors: Map<VmRun, unknown>, options: UpOptions, org: string, identityFile: string): Promise<UpResult> {
  const interrupted = options.signal.aborted
  const failed = vms.filter((vm) => errors.has(vm) || interrupted)
  const succeeded = vms.filter((vm) => !failed.includes(vm))
  const keepPartial = !interrupted && options.min !== undefined && succeeded.length >= options.min
  const rollBack = failed.length === 0 ? [] : keepPartial ? failed : vms

  // Roll back in parallel, as many at once as any deletion: a fleet's clean-up should not take N times one.
  const outcomes = await mapBounded(rollBack, MAX_MUTATIONS_IN_FLIGHT, (vm) => provisioner.rollback(vm))
  const attempted = outcomes.some((outcome) => outcome.attempted)
  const results: DeleteResult[] = outcomes.flatMap((outcome) => outcome.results)
  const cleanup: Cleanup | null = rollBack.length === 0 ? null : {attempted, results, survivors: results.filter((result) => result.billing !== false).map((result) => result.uid)}
  const failures = failed.map((vm) => {
    const error = asTargonError(errors.get(vm) ?? options.signal.reason)
    return {error: {code: error.code, message: error.message}, name: vm.name ?? null, uid: vm.uid ?? null}
  })
  const result: UpResult = {cleanup, failed: failures, leftovers: provisioner.leftovers, org, vms: (keepPartial || failed.length === 0 ? succeeded : []).map((vm) => provisioner.toResult(vm, identityFile))}
  const kept = keptNote(
    rollBack.filter((vm, index) => vm.uid !== undefined && !outcomes[index]?.attempted),
    options.onFailure,
  )
  if (keepPartial && kept) options.warn(kept)

  if (failed.length === 0 || keepPartial) return result

  const data = {...result, vms: vms.map((vm) => provisioner.toResult(vm, identityFile))} as unknown as Record<string, unknown>
  const first = asTargonError(errors.get(failed[0] as VmRun) ?? options.signal.reason)
  const sameCause = failures.every((failure) => failure.error.code === first.code)
  const error = interrupted ? asTargonError(options.signal.reason) : options.count === 1 || (sameCause && succeeded.length === 0) ? first : partialFailure(failures.length, options.count, succeeded.length)
  error.data = data
  const notes = [
    kept,
    cleanup && cleanup.survivors.length > 0 ? `still present after clean-up: ${cleanup.survivors.join(', ')}; run targon down ${cleanup.survivors.join(' ')}` : undefined,
  ].filter((note) => note !== undefined)
  if (notes.length > 0) throw new TargonError(error.code, `${error.message}; ${notes.join('; ')}`, {data, hint: error.hint, resource: error.resource, signal: error.signal})
  throw error
}

function partialFailure(failedCount: number, count: number, succeededCount: number): TargonError {
  const rolledBack = succeededCount === 0 ? '' : succeededCount === 1 ? '; the one that succeeded was rolled back' : `; the ${succeededCount} that succeeded were rolled back`
  return new TargonError('PARTIAL_FAILURE', `${failedCount} of ${countOf(count, 'VM')} failed${rolledBack}`, {hint: 'see data.failed for the causes; pass --min K to keep a partial fleet'})
}

/** What a failed run left running on purpose (--on-failure keep, or an adopted VM under auto), and how to delete it. */
function keptNote(kept: VmRun[], onFailure: OnFailure): string | undefined {
  if (kept.length === 0) return undefined
  const names = kept.map((vm) => `${vm.name ?? vm.uid} (${vm.uid})`).join(', ')
  const uids = kept.map((vm) => vm.uid).join(' ')
  const why = onFailure === 'keep' ? '--on-failure keep' : 'adopted, and --on-failure auto deletes only what this run created'
  const billing = kept.some((vm) => vm.status !== 'registered') ? 'still billing' : 'registered, not yet billing'
  return `kept ${names} (${why}), ${billing}: delete with targon down ${uids}`
}
