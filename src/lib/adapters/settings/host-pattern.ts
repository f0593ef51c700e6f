/**
 * dstack-host-pattern: the name dstack reaches each VM by, e.g. {uid}.{ip}.sslip.io. dstack keys an SSH fleet's hosts
 * by hostname, so VMs that share a public IP (with their own SSH ports) need one name each; a wildcard DNS such as
 * sslip.io resolves every such name to the IP it carries.
 */
import {usageError} from '../../core/errors.js'

const PLACEHOLDERS = ['{ip}', '{port}', '{uid}', '{name}'] as const
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/

export function validateHostPattern(raw: string, source: string): string {
  const hint = 'give a DNS name with {uid} or {name} in it, e.g. {uid}.{ip}.sslip.io'
  if (!raw.includes('{uid}') && !raw.includes('{name}')) throw usageError(`${source} "${raw}" names no VM`, hint)
  const sample = PLACEHOLDERS.reduce((text, placeholder) => text.replaceAll(placeholder, '0'), raw)
  if (!HOSTNAME.test(sample)) throw usageError(`${source} "${raw}" does not make a DNS name`, hint)
  return raw
}

/** The VM's name by the pattern, or null when a part it needs is not a DNS label (a name the API refused, say). */
export function hostByPattern(pattern: string, vm: {ip: string; port: number; uid: string; name: string | null}): string | null {
  const parts: Record<(typeof PLACEHOLDERS)[number], string | null> = {
    '{ip}': vm.ip,
    '{name}': vm.name,
    '{port}': String(vm.port),
    '{uid}': vm.uid.toLowerCase(),
  }
  let host = pattern
  for (const [placeholder, value] of Object.entries(parts)) {
    if (!host.includes(placeholder)) continue
    if (value === null) return null
    host = host.replaceAll(placeholder, value)
  }

  return HOSTNAME.test(host) ? host : null
}
