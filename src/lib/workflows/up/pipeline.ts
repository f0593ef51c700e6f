/**
 * The phases of `targon up`, for every VM of the run: this file is the workflow, top to bottom.
 *
 * VMs go through their phases in parallel, at most PIPELINE_CONCURRENCY at once; each VM's phases run in order and
 * stop at its first failure:
 *
 *   register -> deploy -> wait-running                          (--no-bootstrap)
 *   register -> deploy -> wait-running alongside install -> shim-start
 *
 * With bootstrap, SSH is tried as soon as the VM's state carries an address, so wait-running goes on alongside
 * install and shim-start until the state says running; the VM is up once both sides have ended.
 *
 * Each phase and remote step is announced on the run's event stream (started, then done, skipped or failed); the
 * progress display and the `--json` phase record listen there and decide nothing. A failed VM is handed to `fail`
 * the moment its phase fails, so that its roll-back starts at once.
 */
import type {StepEvent, Substep} from '../../adapters/bootstrap/steps.js'
import {INSTALL_STEPS, SHIM_STEPS, substepOf} from '../../adapters/bootstrap/steps.js'
import type {PhaseName} from '../../adapters/events/schema.js'
import {eventError} from '../../adapters/events/run-events.js'
import {mapBounded} from '../../core/concurrency.js'
import {TargonError, abortError} from '../../core/errors.js'
import {pinHostKey} from '../../adapters/ssh/pins.js'
import {install, startShim} from './bootstrap-phases.js'
import {deploy} from './deploy.js'
import {register} from './register.js'
import type {Provisioning, UpRequest} from './provisioning.js'
import type {Booting, Stage, VmTrack} from './stages.js'
import {PolledStateWatch, waitRunning} from './wait-running.js'

/** How many VMs go through their phases at once (more wait for a slot). */
export const PIPELINE_CONCURRENCY = 16

/** What a progress display needs to lay out a run before it starts: its phases in order, and their remote steps. */
export interface PipelineLayout {
  phases: {name: PhaseName; substeps: Substep[] | undefined}[]
  /** The phase that runs alongside the phases after it (wait-running, with bootstrap); null: all in order. */
  alongside: PhaseName | null
  /** How many VMs the run has, and how many go through their phases at once. */
  count: number
  concurrency: number
}

export function pipelineLayout(request: UpRequest, count: number): PipelineLayout {
  const {bootstrap} = request
  const phases: PipelineLayout['phases'] = [
    {name: 'register', substeps: undefined},
    {name: 'deploy', substeps: undefined},
    {name: 'wait-running', substeps: undefined},
  ]
  if (bootstrap) phases.push({name: 'install', substeps: INSTALL_STEPS})
  if (bootstrap?.shim) phases.push({name: 'shim-start', substeps: SHIM_STEPS})
  return {alongside: bootstrap ? 'wait-running' : null, concurrency: Math.min(count, PIPELINE_CONCURRENCY), count, phases}
}

/** Runs every VM's phases; `fail` is told of each VM that failed, with its first error, as soon as it fails. */
export async function provisionAll(ctx: Provisioning, tracks: VmTrack[], fail: (track: VmTrack, error: unknown) => void): Promise<void> {
  await mapBounded(tracks, PIPELINE_CONCURRENCY, (track) => provisionVm(ctx, track, fail).catch(() => undefined))
  for (const track of tracks) if (!track.failedWith) followRunningAddress(ctx, track)
}

/** One VM, from nothing to ready. */
async function provisionVm(ctx: Provisioning, track: VmTrack, fail: (track: VmTrack, error: unknown) => void): Promise<void> {
  const phase = (name: PhaseName, work: (handle: PhaseHandle) => Promise<PhaseOutcome>, startsLate = false) =>
    runPhase(ctx, track, name, work, fail, startsLate)

  await phase('register', async ({report}) => {
    track.stage = await register(ctx, track, report)
    return track.claim?.origin === 'adopted' ? 'skipped' : 'done'
  })

  await phase('deploy', async ({report}) => {
    const {stage} = track
    if (stage?.kind !== 'registered') return 'skipped'
    track.stage = await deploy(ctx, track, stage, report)
    return 'done'
  })

  const {bootstrap} = ctx.request
  if (!bootstrap) {
    await phase('wait-running', async () => {
      if (track.stage?.kind === 'running') return 'skipped'
      track.stage = await waitRunning(ctx, expectStage(track.stage, 'deployed'))
      return 'done'
    })
    return
  }

  // A VM adopted while running has nothing to wait for; any other is watched from here on, alongside its bootstrap.
  const from = track.stage?.kind === 'running' ? track.stage : booting(ctx, track)
  await alongside(
    phase('wait-running', async () => {
      if (from.kind === 'running') return 'skipped'
      await from.watch.running
      return 'done'
    }),
    (async () => {
      // Install really starts at its first SSH attempt, once the state carries an address.
      await phase(
        'install',
        async ({began, onStep}) => {
          const bootstrapped = await install(ctx, from, bootstrap, onStep, began)
          track.stage = bootstrapped
          if (!bootstrap.shim) bootstrapped.watch?.bootstrapDone()
          return 'done'
        },
        true,
      )
      if (!bootstrap.shim) return
      await phase('shim-start', async ({onStep}) => {
        const ready = await startShim(ctx, expectStage(track.stage, 'bootstrapped'), bootstrap, onStep)
        track.stage = ready
        ready.watch?.bootstrapDone()
        return 'done'
      })
    })(),
  )
}

type PhaseOutcome = 'done' | 'skipped'

/** What a phase may say while it runs. */
interface PhaseHandle {
  /** A line about what it waits for. */
  report: (line: string) => void
  /** A remote step's event, from the bootstrap script. */
  onStep: (event: StepEvent) => void
  /** The phase really starts now (for a phase that starts late). */
  began: () => void
}

/** One phase of one VM, announced on the event stream: started, then done, skipped or failed (then the VM fails). */
async function runPhase(
  ctx: Provisioning,
  track: VmTrack,
  name: PhaseName,
  work: (handle: PhaseHandle) => Promise<PhaseOutcome>,
  fail: (track: VmTrack, error: unknown) => void,
  startsLate: boolean,
): Promise<void> {
  const vm = () => track.ref
  const calledAt = ctx.clock.now()
  let startedAt: number | undefined
  const began = () => {
    if (startedAt !== undefined) return
    startedAt = ctx.clock.now()
    ctx.events.emit({phase: name, status: 'started', type: 'phase', vm: vm()})
  }

  if (!startsLate) began()
  // Step durations are differences of the VM's own clock, never compared with ours.
  const stepStarts = new Map<string, number>()
  const onStep = (event: StepEvent) => {
    // Only the script's own steps, by their stable names: a line that merely looks like one is a VM's stray output.
    const substep = substepOf(event.id)
    if (!substep) return
    if (event.event === 'start') {
      // A step starts once per VM: the marker check runs in the check call, and again at the head of a full install.
      const again = stepStarts.has(substep.name)
      stepStarts.set(substep.name, event.at)
      if (again) return
    }

    const start = stepStarts.get(substep.name) ?? event.at
    ctx.events.emit({
      detail: event.event === 'start' ? substep.title : event.detail || null,
      duration_ms: event.event === 'start' ? null : Math.max(0, event.at - start),
      phase: name,
      status: STEP_STATUS[event.event],
      step: substep.name,
      type: 'step',
      vm: vm(),
    })
  }

  const report = (line: string) => ctx.events.emit({detail: line, phase: name, status: 'progress', type: 'progress', vm: vm()})
  try {
    const outcome = await work({began, onStep, report})
    ctx.events.emit({duration_ms: ctx.clock.now() - (startedAt ?? calledAt), phase: name, status: outcome, type: 'phase', vm: vm()})
  } catch (thrown) {
    // Whatever a phase failed with once the run was interrupted (or ran out of time) is the interruption's doing: a
    // remote step stopped by it reports an exit by SIGTERM, which is no failure of that step.
    const error = ctx.signal.aborted ? abortError(ctx.signal) : thrown
    // The first error is the VM's cause; told before the event, so that the VM's line already says it failed.
    fail(track, error)
    ctx.events.emit({
      duration_ms: ctx.clock.now() - (startedAt ?? calledAt),
      error: eventError(error),
      phase: name,
      status: 'failed',
      type: 'phase',
      vm: vm(),
    })
    throw error
  }
}

const STEP_STATUS = {fail: 'failed', ok: 'done', skip: 'skipped', start: 'started'} as const

/** Both sides run to their end (a failing side ends the other through the VM's state watch); the first error wins. */
async function alongside(...sides: Promise<void>[]): Promise<void> {
  const outcomes = await Promise.allSettled(sides)
  const failed = outcomes.find((outcome) => outcome.status === 'rejected')
  if (failed) throw failed.reason
}

/**
 * The bootstrap may have used the address the state gave while the VM still said provisioning. Should the state give
 * another once it says running, what is recorded (the result, the host-key pin, local state) follows the running one:
 * the host key stays the same, as it is the same VM.
 */
function followRunningAddress(ctx: Provisioning, track: VmTrack): void {
  const {stage} = track
  if (stage?.kind !== 'bootstrapped' && stage?.kind !== 'ready') return
  const running = stage.watch?.runningEndpoint
  const used = stage.endpoint
  if (!running || (running.host === used.host && running.port === used.port)) return
  const {claim, hostKey} = stage
  ctx.warn(
    `${claim.name} moved from ${used.host}:${used.port} to ${running.host}:${running.port} when it started running; using the new address`,
  )
  pinHostKey(ctx.state, {name: claim.name, org: ctx.request.org, uid: claim.uid}, running, hostKey)
  track.stage = {...stage, endpoint: running}
}

/** A deployed VM, its state now watched. */
function booting(ctx: Provisioning, track: VmTrack): Booting {
  const deployed = expectStage(track.stage, 'deployed')
  const next: Booting = {...deployed, kind: 'booting', watch: new PolledStateWatch(ctx, deployed.claim, {bootstrapping: true})}
  track.stage = next
  return next
}

/** The phases run in order and stop at a VM's first failure, so a phase always finds the stage before it. */
function expectStage<K extends Stage['kind']>(stage: Stage | undefined, kind: K): Extract<Stage, {kind: K}> {
  if (stage?.kind !== kind) throw new TargonError('INTERNAL', `a phase found the VM ${stage?.kind ?? 'not registered'}, not ${kind}`)
  return stage as Extract<Stage, {kind: K}>
}
