/**
 * The one wording of a warning that no guard covers what a run leaves behind (up's VMs, run --detach --down's job):
 * what goes uncovered, the limits nothing enforces then, and what follows or what to do.
 */
export interface Unguarded {
  /** What no guard covers: "the VMs this run made", "this config directory". */
  what: string
  /** The limits of the run that nothing enforces then (--ttl, --max-cost, --idle); none named when empty. */
  limits?: readonly string[]
  /** After the colon: what follows from it, and the command that installs a guard. */
  then: string
}

/** "no guard covers the VMs this run made, so nothing enforces --ttl: run targon guard install --team ...". */
export function unguardedText({limits = [], then, what}: Unguarded): string {
  return `no guard covers ${what}${limits.length === 0 ? '' : `, so nothing enforces ${limits.join(', ')}`}: ${then}`
}
