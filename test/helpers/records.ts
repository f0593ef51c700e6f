/** The local records targon keeps of its VMs (config dir/vms/ORG/NAME.json), edited as time passing would change them. */
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

/** The org of the simulator's default key. */
const ORG = 'acme'

const recordFile = (configDir: string, name: string) => join(configDir, 'vms', ORG, `${name}.json`)

/** The VM's TTL deadline, as its record holds it (null: no TTL). */
export function ttlOf(configDir: string, name: string): number | null {
  const at = JSON.parse(readFileSync(recordFile(configDir, name), 'utf8')).ttl_expires_at
  return at === null || at === undefined ? null : Date.parse(at)
}

/** Sets a VM's TTL deadline in its record, where targon keeps it: how a test moves a deadline without waiting for it. */
export function setTtl(configDir: string, name: string, at: number): void {
  const file = recordFile(configDir, name)
  writeFileSync(file, JSON.stringify({...JSON.parse(readFileSync(file, 'utf8')), ttl_expires_at: new Date(at).toISOString()}), {
    mode: 0o600,
  })
}
