/**
 * The skeleton of the commands over many VMs (exec, cp, logs, jobs, extend, status; down selects the same way): the
 * flags that say which VMs (names, uids or --name labels, --fleet, --all, --any-owner), the one way from them to a
 * typed selection under the owner rules, and the run over it: connected, the org resolved, at most --parallel VMs at
 * once (the workflows announce each VM as an event and answer with its own result), each VM's output on lines of its own.
 */
import {type Command, Flags} from '@oclif/core'

import {BaseCommand, EVENT_FLAGS} from './base-command.js'
import type {CommandId} from './contract.js'
import {printable} from '../core/output.js'
import {type VmReach, parseVmList} from '../domain/fleet/fan-out.js'
import type {OwnerScope} from '../domain/fleet/owners.js'
import type {VmSelection} from '../workflows/select-vms.js'
import type {SettingsResolver} from '../adapters/settings/resolve.js'
import type {LocalState} from '../adapters/state/local-state.js'
import type {TargonClient} from '../adapters/targon/client.js'

interface Described {
  summary: string
  description?: string
  exclusive?: string[]
}

/** The fleet of a run that names none, where none is configured. */
export {DEFAULT_FLEET} from '../adapters/settings/table.js'

/** The VMs parallel work may reach at once, whatever --parallel asks. */
const MAX_PARALLEL = 64

/** The selection flags; each command says in its summary what they select there (a fleet to run on, to show, to search). */
export const SELECTION_FLAGS = {
  /** --fleet: the fleet of a whole-fleet run, and of VMs named by their --name label. */
  fleet: (described: Described) => Flags.string({...described, multiple: false}),
  /** --vms: comma-separated VM names, uids or --name labels, instead of the whole fleet. */
  vms: (described: Described) => Flags.string({...described, multiple: false}),
  /** --all: every VM of this tool, in every fleet. */
  all: (described: Described) => Flags.boolean({default: false, ...described}),
  /** --any-owner: in a shared org, other owners' VMs too (the owner rules: see FleetSelection.owners). */
  anyOwner: (described: Described) => Flags.boolean({default: false, ...described}),
}

/** The flags of work fanned out over VMs: its events (--events, --events-file), and how many VMs at once. */
export function fanOutFlags(parallel: {default: number; summary: string; max?: number}) {
  return {
    ...EVENT_FLAGS,
    parallel: Flags.integer({default: parallel.default, max: parallel.max ?? MAX_PARALLEL, min: 1, summary: parallel.summary}),
  }
}

/** What a command's selection flags were given; the ones it does not declare are absent. */
export interface SelectionFlags {
  fleet?: string
  vms?: string
  all?: boolean
  'any-owner'?: boolean
}

/** The settings a selection goes by, read before it is made. */
export interface SelectionSettings {
  /** --fleet, else the configured fleet, else "default". */
  fleet: string
  /** The owner set (config key owner, TARGON_OWNER); null when none is. */
  owner: string | null
}

/** Which VMs a command over many works on. */
export interface FleetSelection {
  /** The VM names, uids or --name labels given (arguments, or --vms); empty: the VMs the fleet or the bulk flags take. */
  targets: string[]
  /** The fleet of a whole-fleet run and of VMs named by label: --fleet, else the configured one. */
  fleet: string
  /** The fleet --fleet named; null without it, when the configured fleet only says what a label means. */
  fleetGiven: string | null
  /** --all: every fleet. */
  all: boolean
  /** With an owner set, that owner's VMs, names resolving among them first; --any-owner widens to every owner. */
  owners: OwnerScope
}

/** The settings the selection flags go by (--fleet is checked here: a bad one is a usage error). */
export async function selectionSettings(settings: SettingsResolver, flags: SelectionFlags): Promise<SelectionSettings> {
  return {fleet: await settings.get('fleet', flags.fleet), owner: (await settings.get('owner')) ?? null}
}

/** The selection the flags make, with the VMs named as arguments; pure. An empty --vms is a usage error. */
export function selectionOf(flags: SelectionFlags, settings: SelectionSettings, named: readonly string[] = []): FleetSelection {
  return {
    all: flags.all ?? false,
    fleet: settings.fleet,
    fleetGiven: flags.fleet === undefined ? null : settings.fleet,
    owners: {anyOwner: flags['any-owner'] ?? false, owner: settings.owner},
    targets: [...named, ...parseVmList(flags.vms)],
  }
}

/** What work over the selected VMs is given. */
export interface OverVms extends VmReach {
  client: TargonClient
  org: string
  /** Aborted by a first Ctrl-C where the command said what a forced exit leaves behind (see overVms); else never. */
  signal: AbortSignal
  state: LocalState
  /** The selection as the workflows take it. */
  vms: VmSelection
}

export abstract class FleetCommand<T extends typeof Command, Id extends CommandId> extends BaseCommand<T, Id> {
  /** The VMs the selection flags (and `named`, the VMs given as arguments) select, under the owner rules. */
  protected async selection(named: readonly string[] = []): Promise<FleetSelection> {
    const flags = this.flags as SelectionFlags
    // A --vms that names nothing is a mistake of the command line: said before any setting is read.
    parseVmList(flags.vms)
    return selectionOf(flags, await selectionSettings(this.ctx.settings, flags), named)
  }

  /**
   * Runs `work` over the selected VMs, connected and with the org resolved. With `onForcedExit`, a first Ctrl-C
   * aborts `signal` and lets the work wind down; a second exits at once with those lines.
   */
  protected overVms<R>(selection: FleetSelection, work: (over: OverVms) => Promise<R>, onForcedExit?: () => string[]): Promise<R> {
    const start = async (client: TargonClient, signal: AbortSignal) => {
      const state = this.ctx.localState()
      const org = await this.ctx.org(client)
      const {fleet, owners, targets} = selection
      const connectMs = await this.ctx.sshConnectMs()
      return work({client, configDir: this.ctx.settings.dir, connectMs, org, signal, state, vms: {fleet, org, owners, targets}})
    }

    return onForcedExit ? this.withApi(start, onForcedExit) : this.withApi((client) => start(client, this.ctx.signal))
  }

  /**
   * One line of a VM's output, as `vm | line` on the stream it came on, escaped unless `raw`; nothing under --json.
   * With --events ndjson stderr carries events only: a VM's stderr line goes there as a progress event.
   */
  protected vmLine(vm: string, stream: 'stderr' | 'stdout', line: string, raw = false): void {
    if (this.jsonEnabled()) return
    if (stream === 'stderr' && this.eventsOnStderr()) this.events.emit({detail: `${vm} | ${line}`, status: 'progress', type: 'exec'})
    else (stream === 'stdout' ? process.stdout : process.stderr).write(`${printable(vm)} | ${raw ? line : printable(line)}\n`)
  }
}
