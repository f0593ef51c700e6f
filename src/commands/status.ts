import {Args, Flags} from '@oclif/core'

import {DEFAULT_FLEET, FleetCommand, SELECTION_FLAGS, selectionSettings} from '../lib/cli/fleet-command.js'
import {statusRequest} from '../lib/cli/requests/status.js'
import {statusLines} from '../lib/cli/render/status.js'
import {prose} from '../lib/core/output.js'
import {runStatus, type StatusResult} from '../lib/workflows/status/index.js'

export default class Status extends FleetCommand<typeof Status, 'status'> {
  static summary = 'Show your Targon VMs (state, address, price, age, estimated cost, TTL, budget left) and what the org bills per hour.'

  static description = prose(`What the API says, enriched with local state. By default your VMs in every fleet: with an owner
set (targon config set owner NAME, or TARGON_OWNER), that owner's VMs of this tool, with a warning that counts the
others that bill (--any-owner shows them all); with no owner set, every VM of this tool, whoever rented it. --fleet
narrows to one fleet. The configured fleet (else "${DEFAULT_FLEET}") does not narrow it: it says what a short --name
label means, and which fleet --dstack-fleet prints. Drift is flagged: a local record whose VM is gone (local-only), or
a VM of this tool with no local record (server-only, e.g. created on another machine). TTL_LEFT, BUDGET_LEFT and
ENDS_BY go by the stricter of the local record and the limits file each VM carries, read over SSH where this directory
reaches the VM (limits_source: local, vm or both); a VM whose limits are known nowhere shows "limits unknown" and "?",
never "no limit".

The last line sums what the whole org bills per hour, whatever the selection ("No VMs" included), split by owner: VMs
of other owners, VMs without an owner and VMs of other tools included, VMs of unknown price and records of unknown
billing counted and said ("Org acme bills 3.97 USD/h: alice 3.38, bob 0.59"). With --json it is org_billing; -q and
--dstack-fleet print only what a program reads.

With a dstack server configured (dstack-url, dstack-project, dstack-token), the DSTACK column (dstack_state) says
whether a targon-* dstack fleet holds each VM: in-fleet, busy (held, with a dstack job running on it), not-in-fleet,
or unknown when dstack's fleets could not be read within 10 s (a warning; status still succeeds).`)

  static examples = [
    {command: '<%= config.bin %> status', description: 'Your VMs in every fleet, and what the org bills per hour'},
    {command: '<%= config.bin %> status --fleet train', description: 'Only fleet "train"'},
    {
      command: '<%= config.bin %> status --any-owner --any-origin',
      description: "Every VM of the org, including colleagues' and ones other tools created",
    },
    {command: '<%= config.bin %> status tcli-default-k3v9x2qa', description: 'One VM by name (or uid)'},
    {command: '<%= config.bin %> status -q | xargs -n1 targon ssh --print', description: 'uids only, one per line'},
    {
      command: '<%= config.bin %> status --dstack-fleet --fleet train > fleet.dstack.yml && dstack apply -f fleet.dstack.yml',
      description: 'Hand the bootstrapped VMs of fleet "train" to dstack',
    },
  ]

  static args = {
    vms: Args.string({
      ignoreStdin: true,
      description: 'VM names, uids or --name labels (of --fleet, else of the configured fleet); default: your VMs in every fleet',
      required: false,
    }),
  }
  static strict = false

  static flags = {
    usage: Flags.boolean({
      default: false,
      description:
        "Reads each running VM over its pinned SSH connection (at most 8 at once): GPU utilisation and memory, SSH sessions and tunnels, dstack tasks, and how long it has been idle by the VM's own idle clock (with --json: usage, idle_seconds, idle_reason). A VM that cannot be read says why, never a guess.",
      summary: 'Also show what each running VM is doing: GPUs, SSH sessions and tunnels, dstack tasks, and how long it has been idle.',
    }),
    'all-fleets': Flags.boolean({
      exclusive: ['fleet'],
      default: false,
      summary: 'Show the VMs of every fleet (the default without --fleet).',
    }),
    'any-origin': Flags.boolean({default: false, summary: 'Include VMs not created by this tool.'}),
    'any-owner': SELECTION_FLAGS.anyOwner({
      summary: "In a shared org with an owner set, show every owner's VMs, not only yours (each VM says whose it is).",
    }),
    'show-deleted': Flags.boolean({
      default: false,
      summary:
        'Also list tombstones (deleted VMs that Targon still lists for a while; they do not bill) and, in the table, records of unknown billing.',
    }),
    'dstack-fleet': Flags.boolean({
      exclusive: ['all-fleets', 'quiet'],
      default: false,
      summary: "Print a dstack SSH fleet file (YAML) for the fleet's bootstrapped VMs; exit 4 when there are none.",
    }),
    fleet: SELECTION_FLAGS.fleet({
      summary: 'Show only this fleet (default: every fleet); also the fleet of VMs given by their short --name label.',
    }),
    quiet: Flags.boolean({char: 'q', default: false, summary: 'Print uids only, one per line.'}),
  }

  public async run(): Promise<StatusResult> {
    const settings = {
      ...(await selectionSettings(this.ctx.settings, this.flags)),
      idleLimitMs: (await this.ctx.settings.get('idle-limit')) ?? null,
    }
    const request = statusRequest(this.flags, this.positionals, settings)
    return this.overVms(request.selection, async ({client, org, state}) => {
      const result = await runStatus(this.ctx, client, state, {...request.status, org})
      if (!this.jsonEnabled())
        for (const line of statusLines(result, request.view, this.ctx.clock.now()))
          if (line.to === 'document') process.stdout.write(line.text)
          else if (line.to === 'result') this.log(line.text)
          else this.info(line.text)
      return result
    })
  }
}
