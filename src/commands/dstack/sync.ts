import {Flags} from '@oclif/core'

import {BaseCommand} from '../../lib/cli/base-command.js'
import {TargonError} from '../../lib/core/errors.js'
import {countOf, prose} from '../../lib/core/output.js'
import {type DstackSyncResult, openDstack, runDstackSync, validateFleet} from '../../lib/workflows/dstack/index.js'
import {ownerScope} from '../../lib/domain/fleet/owners.js'

export default class DstackSync extends BaseCommand<typeof DstackSync, 'dstack sync'> {
  static summary = "Make dstack's SSH fleet targon-<fleet> hold exactly the fleet's bootstrapped, running VMs."

  static description = prose(`Talks to the dstack server of the profile (dstack-url, dstack-project and dstack-token:
targon config set, or TARGON_DSTACK_URL, TARGON_DSTACK_PROJECT, TARGON_DSTACK_TOKEN) through its REST API, as dstack
apply does: it gets the plan, removes the hosts whose VM is gone (delete_instances), and applies the fleet with the
plan's current resource, creating it when missing. dstack connects to each VM as ubuntu with this directory's project
key, which the fleet's spec carries to the dstack server. A host whose port changed is removed, then added. A host
that runs a dstack job is never removed: it stays until the job ends (a warning says so). When dstack is processing
the fleet, or the fleet changed since the plan, the request is sent again, at most 6 times, 1 s to 15 s apart.

dstack keys an SSH fleet's hosts by name: VMs that share a public IP need one DNS name each, set by
dstack-host-pattern (e.g. {uid}.{ip}.sslip.io); without it such VMs are refused (exit 3), as is a host that another
dstack fleet holds (remove it there first). dstack's own server must reach each VM's IP and SSH port.`)

  static examples = [
    {command: '<%= config.bin %> dstack sync --fleet train', description: "Put fleet train's ready VMs into dstack's fleet targon-train"},
    {command: '<%= config.bin %> dstack sync --fleet train --json', description: 'What was added, removed and left, and the requests sent'},
  ]

  static flags = {
    fleet: Flags.string({required: true, summary: 'The targon fleet whose VMs dstack fleet targon-<fleet> holds.'}),
  }

  public async run(): Promise<DstackSyncResult> {
    const fleet = validateFleet(this.flags.fleet)
    const owners = await ownerScope(this.ctx.settings, false)
    const dstack = await openDstack(this.ctx, {trace: this.traceSink()})
    if (dstack === null)
      throw new TargonError('CONFIG', 'no dstack server is configured', {
        hint: 'targon config set dstack-url URL, dstack-project NAME and dstack-token (read from stdin), or their TARGON_DSTACK_ variables',
      })
    try {
      return await this.withApi(async (client) => {
        const org = await this.ctx.org(client)
        const result = await runDstackSync({...this.ctx, info: (line) => this.info(line)}, client, this.ctx.localState(), dstack, {
          configDir: this.ctx.settings.dir,
          fleet,
          org,
          owners,
        })
        if (!this.jsonEnabled()) this.render(result)
        return result
      })
    } finally {
      await dstack.client.close()
    }
  }

  private render(result: DstackSyncResult): void {
    const line = (verb: string, hosts: DstackSyncResult['added']) => {
      for (const host of hosts) this.log(`${verb}\t${host.name ?? host.uid ?? '-'}\t${host.hostname}:${host.port}`)
    }
    line('added', result.added)
    line('removed', result.removed)
    line('busy', result.busy)
    this.info(
      `dstack fleet ${result.dstack_fleet} (project ${result.project}): ${result.action}; ${countOf(result.unchanged.length, 'host')} unchanged, ${result.requests} request(s) to dstack`,
    )
  }
}
