import {Args, Flags} from '@oclif/core'

import {FleetCommand, SELECTION_FLAGS} from '../lib/cli/fleet-command.js'
import {durationFlag, usdFlag} from '../lib/cli/flags.js'
import {type ExtendResult, runExtend} from '../lib/workflows/extend/index.js'
import {usageError} from '../lib/core/errors.js'
import {prose} from '../lib/core/output.js'
import {extendTable} from '../lib/cli/render/extend.js'

export default class Extend extends FleetCommand<typeof Extend, 'extend'> {
  static summary = 'Postpone the limits of VMs: their TTL, their idle deletion, or raise their budget.'

  static description = prose(`--by moves each VM's TTL to (the later of now and its deadline) + the duration, and
holds off its idle deletion (down --idle, sweep) for the duration; --ttl-only or --idle-only moves one of them.
--max-cost USD raises the budget (or sets one where there is none); a value below the current budget is refused
(exit 2). With --ttl-only, a VM without a TTL is left as it was, with a warning, and when none of them has one it
exits 2. The limits are kept in this config directory's records (the API has no field for
them) and in the file each bootstrapped VM carries, so extend works from the directory that ran targon up, and from a
team guard's directory (guard install --team) for a VM that carries its key, by that file alone. The new limits are also written into the file the VM
carries (limits_on_vm), which the sweeps of other directories and the team guard go by, and the idle hold-off into its
idle sampler's config (on the VM's clock), so that its own idle judgement says it is held off. A VM that cannot be
reached keeps the new limits here only, with a warning (limits_on_vm, idle_hold_on_vm: not-written): a sweep that
reads its file goes by the stricter of that file and the record, so run extend again once it can be reached. A VM of another owner, or whose owner could not be read, is refused (exit 2) unless --any-owner; a name that
matches nothing exits 4.
Prints the new deadlines.`)

  static examples = [
    {command: '<%= config.bin %> extend tcli-default-k3v9x2qa --by 1h', description: 'One more hour before its TTL or idle limit fires'},
    {command: '<%= config.bin %> extend worker1 --max-cost 40', description: 'Raise its budget to 40 USD'},
  ]

  static args = {vms: Args.string({description: 'VM names or uids', ignoreStdin: true, required: false})}
  static strict = false

  static flags = {
    'any-owner': SELECTION_FLAGS.anyOwner({
      summary: "Extend another owner's VM, or one whose owner could not be read, too (default: refused, exit 2).",
    }),
    by: durationFlag('--by', {summary: 'How long to postpone: 30m, 2h, 1d.'}),
    fleet: SELECTION_FLAGS.fleet({summary: 'The fleet the VM labels belong to (default: the configured one).'}),
    'idle-only': Flags.boolean({default: false, exclusive: ['ttl-only'], summary: 'Only hold off the idle deletion.'}),
    'max-cost': usdFlag('--max-cost', 'a budget in USD', {
      summary: 'Raise the budget to this many USD (estimated cost: price x age); never lower it.',
    }),
    'ttl-only': Flags.boolean({
      default: false,
      exclusive: ['idle-only'],
      summary: 'Only move the TTL (a VM without one is warned about; exit 2 when none has one).',
    }),
  }

  public async run(): Promise<ExtendResult> {
    const {flags} = this
    if (this.positionals.length === 0) throw usageError('name the VMs to extend', 'targon extend NAME… --by 1h')
    if (flags.by === undefined && flags['max-cost'] === undefined)
      throw usageError('nothing to extend', 'pass --by DURATION or --max-cost USD')
    if (flags.by === undefined && (flags['ttl-only'] || flags['idle-only']))
      throw usageError('--ttl-only and --idle-only say what --by moves', 'add --by DURATION')
    const selection = await this.selection(this.positionals)
    return this.overVms(selection, async ({client, configDir, connectMs, org, state, vms}) => {
      const result = await runExtend(this.ctx, client, state, {
        byMs: flags.by ?? null,
        configDir,
        connectMs,
        idle: !flags['ttl-only'],
        labelFleet: vms.fleet,
        maxCostUsd: flags['max-cost'] ?? null,
        org,
        owners: vms.owners,
        targets: vms.targets,
        ttl: !flags['idle-only'],
      })
      if (!this.jsonEnabled()) this.log(extendTable(result))
      return result
    })
  }
}
