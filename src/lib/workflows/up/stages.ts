/**
 * What one VM of `targon up` has become, as typed values passed from phase to phase:
 *
 *   (nothing) --register--> registered --deploy--> deployed --wait-running--> running
 *             --install--> bootstrapped --shim-start--> ready
 *
 * With bootstrap, a deployed VM becomes `booting` instead: its state is watched (wait-running.ts), and install
 * starts from it as soon as the state carries an address, while wait-running goes on alongside until the state
 * says running. The watch travels with the stages until the VM is ready.
 *
 * An adopted VM (an existing one with the same --name) enters the chain at the stage it is
 * already in, and the phases before it are reported as skipped.
 *
 * Apart from the stages, a VM's track holds its claim: the workload this run holds for it, as
 * soon as one exists (even when the phase that made it then fails). The failure policy reads
 * only the claim; the result reads the latest stage.
 */
import type {Marker} from '../../adapters/bootstrap/marker.js'
import type {ShimOutput} from '../../adapters/bootstrap/shim.js'
import type {Offer} from '../../domain/offers/schema.js'
import type {PhaseResult} from './schema.js'
import type {HostKey, SshSession} from '../../adapters/ssh/session.js'
import type {EventVm} from '../../adapters/events/run-events.js'

/**
 * The workload this run holds for a VM, and whether the run created it or adopted an existing one. The one
 * mutable record of a VM: phases update the status they see, so that clean-up starts from the latest.
 */
export interface Claim {
  readonly uid: string
  readonly name: string
  readonly origin: 'created' | 'adopted'
  status: string
  /** A deploy of it was sent and no answer settled it (an interrupt, a lost answer): it may still land. */
  deployUnsettled?: boolean
}

interface Priced {
  claim: Claim
  /** The offer rented (unknown for an adopted VM whose resource is not on offer any more). */
  offer: Offer | undefined
  /** USD/h for the whole VM, as the server reports it (the offer's when it does not). */
  price: number
  resource: string | null
  gpu: {model: string | null; count: number | null}
  createdAt: string | null
}

export interface Registered extends Priced {
  kind: 'registered'
}

export interface Deployed extends Priced {
  kind: 'deployed'
}

/**
 * What the stages need of the state watch of a booting VM (wait-running.ts implements it): the addresses the state
 * gives, whether and why the VM failed, and the end of the bootstrap. Declared here so that the stages depend on
 * no phase.
 */
export interface StateWatch {
  /** The first address the state carries, even while it still says provisioning. */
  readonly address: Promise<Endpoint>
  /** The address once the state says running. */
  readonly running: Promise<Endpoint>
  /** The address once the state said running; undefined before. */
  readonly runningEndpoint: Endpoint | undefined
  /** Aborts as soon as the VM fails. */
  readonly signal: AbortSignal
  bootstrapDone(): void
  abandon(error: unknown): void
  failed(fresh?: boolean): Promise<unknown>
}

/** Deployed, not yet running, its state watched: the bootstrap may start once the state carries an address. */
export interface Booting extends Priced {
  kind: 'booting'
  watch: StateWatch
}

export interface Endpoint {
  host: string
  port: number
}

export interface Running extends Priced {
  kind: 'running'
  endpoint: Endpoint
}

export interface Bootstrapped extends Priced {
  kind: 'bootstrapped'
  endpoint: Endpoint
  ssh: SshSession
  hostKey: HostKey
  marker: Marker
  /** A VM found bootstrapped ran the shim phase's remote part in the same call (null: shim-start runs it). */
  shimOutput: ShimOutput | null
  /** The state watch of a VM that was still booting when its bootstrap began (null: it was running already). */
  watch: StateWatch | null
}

export interface Ready extends Omit<Bootstrapped, 'kind'> {
  kind: 'ready'
  shimVersion: string
  /** Why dstack owns the VM's shim (left as it is); null: targon manages it. */
  dstackManaged: string | null
}

export type Stage = Booting | Bootstrapped | Deployed | Ready | Registered | Running

/** One VM of a run: its claim, its latest stage, and how each phase went. */
export class VmTrack {
  claim?: Claim
  stage?: Stage
  readonly phases: PhaseResult[] = []
  /** The error code it failed with, once it failed. */
  failedWith?: string

  constructor(readonly index: number) {}

  /** How events name it: its position in the run, and its uid and name once it has them. */
  get ref(): EventVm {
    return {index: this.index + 1, name: this.claim?.name ?? null, uid: this.claim?.uid ?? null}
  }

  /** The SSH session a bootstrapped VM still holds open. */
  closeSsh(): void {
    if (this.stage?.kind === 'bootstrapped' || this.stage?.kind === 'ready') this.stage.ssh.close()
  }
}
