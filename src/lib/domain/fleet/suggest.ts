/**
 * "Did you mean …?" for a VM name or label that matched nothing: the closest among the names a name typed there could
 * reach (the owner's VMs and those without an owner, when an owner is set; tombstones left out), and their labels
 * within the fleet that labels resolve in (worker1 for tcli-<fleet>-worker1).
 */
import {closest} from '../../core/similar.js'
import {NAME_PREFIX} from './naming.js'
import type {OwnerScope, VmOwner} from './owners.js'

export function suggestVmName(
  typed: string,
  vms: readonly {name: string | null; owner: VmOwner; gone: boolean}[],
  fleet: string,
  scope: OwnerScope,
): string | undefined {
  const labelled = `${NAME_PREFIX}${fleet}-`
  const names = vms
    .filter((vm) => !vm.gone && (scope.owner === null || scope.anyOwner || vm.owner === scope.owner || vm.owner === null))
    .flatMap((vm) => (vm.name === null ? [] : vm.name.startsWith(labelled) ? [vm.name.slice(labelled.length), vm.name] : [vm.name]))
  return closest(typed, names)
}

/** The hint of a name that matched nothing: the suggestion first, if there is one. */
export function notFoundHint(suggestion: string | undefined, otherwise: string): string {
  return suggestion ? `did you mean ${suggestion}? Else ${otherwise}` : otherwise
}

/**
 * Where a name that was not found can be looked up: every fleet, and under an owner every owner too, since the
 * owner's own listing does not show a colleague's VM (reached by its exact uid only).
 */
export function whereToLook(scope: {owner: string | null; anyOwner: boolean}): string {
  return scope.owner === null || scope.anyOwner
    ? 'targon status --all-fleets'
    : "targon status --all-fleets --any-owner (another owner's VM is reached by its uid)"
}
