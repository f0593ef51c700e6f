/** What `targon extend` prints: each VM's limits after the extension, as a table. */
import {dash, renderTable} from '../../core/output.js'
import type {ExtendResult} from '../../workflows/extend/schema.js'

export function extendTable(result: ExtendResult): string {
  return renderTable(
    [
      {header: 'NAME', value: (row) => dash(row.name)},
      {header: 'TTL', value: (row) => dash(row.ttl_expires_at?.slice(0, 16))},
      {header: 'IDLE_HELD_UNTIL', value: (row) => dash(row.idle_hold_until?.slice(0, 16))},
      {header: 'BUDGET', value: (row) => (row.max_cost_usd === null ? '-' : `${row.max_cost_usd} USD`)},
      {header: 'BUDGET_ENDS', value: (row) => dash(row.budget_ends_at?.slice(0, 16))},
    ],
    result.vms,
  )
}
