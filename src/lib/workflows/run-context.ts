/**
 * What one run of a command carries to its workflow, built once by the command's base from the factory it was given
 * (cli/factory.ts): its settings (bound to the run's environment, --profile and config directory), its clock, the
 * stream of its events, where a warning goes, the signal a first interrupt aborts, its ration of workload-history
 * reads, its local state, its reconcile window and the org it acts on. Workflows take this value instead of reaching
 * for process-wide state or building any of these themselves.
 */
import type {SettingsResolver} from '../adapters/settings/resolve.js'
import type {LocalState} from '../adapters/state/local-state.js'
import type {TargonClient} from '../adapters/targon/client.js'
import type {FanOutRun, ListingRun} from '../domain/fleet/run.js'

export interface RunContext extends FanOutRun {
  readonly settings: SettingsResolver
  /** Aborted by the first interrupt of a run that guards its interrupts; never aborted otherwise. */
  readonly signal: AbortSignal
  /** The local state of the run's config directory, opened on first use (its checks may refuse the directory). */
  localState(): LocalState
  /** How long an unclear answer to a mutation is reconciled (the reconcile-window setting), read on first use. */
  reconcileWindowMs(): Promise<number>
  /** How long a VM whose sshd does not answer is tried again (the ssh-connect-timeout setting), read on first use. */
  sshConnectMs(): Promise<number>
  /**
   * The org the run acts on (--org, TARGON_ORG, the profile's, or the key's only one), resolved once: the JSON
   * envelope and a line on stderr name it, so that nobody rents in the wrong account unawares.
   */
  org(client: TargonClient): Promise<string>
}

/**
 * What a workflow that deletes (down, sweep, run --down) reads of its run: a listing's parts, and the signal after
 * which no further deletion starts (those under way finish).
 */
export type DeletionRun = ListingRun & Pick<RunContext, 'signal'>
