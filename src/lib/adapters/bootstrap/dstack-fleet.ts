/**
 * The dstack bridge: a dstack SSH fleet configuration for bootstrapped VMs (fields as in
 * dstack's fleet schema: type, name, ssh_config.user, identity_file, hosts[].hostname/port).
 */
import * as z from 'zod'

export const DstackFleetSchema = z.object({
  name: z.string(),
  yaml: z.string().describe('the fleet file, ready for dstack apply -f'),
  hosts: z.array(z.object({hostname: z.string(), port: z.number(), uid: z.string(), name: z.string().nullable()})),
  shared_ips: z.array(z.string()).describe('public IPs used by more than one VM (see the shared-IP caveat)'),
})
export type DstackFleet = z.infer<typeof DstackFleetSchema>

export interface FleetHost {
  uid: string
  name: string | null
  hostname: string
  port: number
}

/** JSON strings are valid YAML double-quoted scalars: safe for any value. */
const scalar = (value: string) => JSON.stringify(value)

export function dstackFleet(fleet: string, identityFile: string, hosts: FleetHost[]): DstackFleet {
  const name = `targon-${fleet}`
  const counts = new Map<string, number>()
  for (const host of hosts) counts.set(host.hostname, (counts.get(host.hostname) ?? 0) + 1)
  const lines = [
    '# dstack SSH fleet for the targon fleet ' + fleet + '. Apply with: dstack apply -f <this file>',
    '# dstack fleet delete does not stop billing: run targon down to delete the VMs.',
    'type: fleet',
    `name: ${scalar(name)}`,
    'ssh_config:',
    '  user: ubuntu',
    `  identity_file: ${scalar(identityFile)}`,
    '  hosts:',
    ...hosts.flatMap((host) => [`    - hostname: ${scalar(host.hostname)}`, `      port: ${host.port}`]),
  ]
  if (hosts.length === 0) lines[lines.length - 1] = '  hosts: []'
  return {
    hosts: hosts.map((host) => ({hostname: host.hostname, name: host.name, port: host.port, uid: host.uid})),
    name,
    shared_ips: [...counts].filter(([, count]) => count > 1).map(([ip]) => ip),
    yaml: `${lines.join('\n')}\n`,
  }
}
