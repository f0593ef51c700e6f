/** `targon status` as a request: its flags, the VMs it names and its settings in, what the workflow is asked out. */
import {describe, expect, it} from 'vitest'

import {selectionOf} from '../../src/lib/cli/fleet-command.js'
import {type StatusFlags, type StatusRequest, type StatusSettings, statusRequest} from '../../src/lib/cli/requests/status.js'

const FLAGS: StatusFlags = {
  'any-origin': false,
  'any-owner': false,
  'dstack-fleet': false,
  quiet: false,
  'show-deleted': false,
  usage: false,
}
const SETTINGS: StatusSettings = {fleet: 'default', idleLimitMs: null, owner: null}

/** What `status` with no flags asks: every fleet, the configured one for labels, no owner set. */
const PLAIN: StatusRequest = {
  selection: {all: false, fleet: 'default', fleetGiven: null, owners: {anyOwner: false, owner: null}, targets: []},
  status: {
    anyOrigin: false,
    configuredFleet: 'default',
    dstackFleet: false,
    fleet: null,
    idleLimitS: null,
    owners: {anyOwner: false, owner: null},
    showDeleted: false,
    targets: [],
    usage: false,
  },
  view: {quiet: false, showDeleted: false, usage: false},
}

interface Row {
  name: string
  flags?: Partial<StatusFlags>
  named?: string[]
  settings?: Partial<StatusSettings>
  /** What differs from PLAIN. */
  want: {selection?: Partial<StatusRequest['selection']>; status?: Partial<StatusRequest['status']>; view?: Partial<StatusRequest['view']>}
}

const ROWS: Row[] = [
  {name: 'no flags: every fleet', want: {}},
  {
    name: 'the configured fleet does not narrow',
    settings: {fleet: 'train'},
    want: {selection: {fleet: 'train'}, status: {configuredFleet: 'train'}},
  },
  {
    name: '--fleet narrows to its fleet',
    flags: {fleet: 'train'},
    settings: {fleet: 'train'},
    want: {selection: {fleet: 'train', fleetGiven: 'train'}, status: {configuredFleet: 'train', fleet: 'train'}},
  },
  {
    name: 'with names, --fleet only says whose labels they are',
    flags: {fleet: 'train'},
    named: ['worker1', 'worker2'],
    settings: {fleet: 'train'},
    want: {
      selection: {fleet: 'train', fleetGiven: 'train', targets: ['worker1', 'worker2']},
      status: {configuredFleet: 'train', fleet: null, targets: ['worker1', 'worker2']},
    },
  },
  {
    name: '--dstack-fleet is of the configured fleet without --fleet',
    flags: {'dstack-fleet': true},
    settings: {fleet: 'train'},
    want: {selection: {fleet: 'train'}, status: {configuredFleet: 'train', dstackFleet: true, fleet: 'train'}},
  },
  {
    name: 'an owner set scopes to that owner',
    settings: {owner: 'alice'},
    want: {selection: {owners: {anyOwner: false, owner: 'alice'}}, status: {owners: {anyOwner: false, owner: 'alice'}}},
  },
  {
    name: '--any-owner widens to every owner',
    flags: {'any-owner': true},
    settings: {owner: 'alice'},
    want: {selection: {owners: {anyOwner: true, owner: 'alice'}}, status: {owners: {anyOwner: true, owner: 'alice'}}},
  },
  {name: '--any-origin', flags: {'any-origin': true}, want: {status: {anyOrigin: true}}},
  {
    name: '--show-deleted lists tombstones and shows records of unknown billing',
    flags: {'show-deleted': true},
    want: {status: {showDeleted: true}, view: {showDeleted: true}},
  },
  {name: '--usage reads the VMs and adds its columns', flags: {usage: true}, want: {status: {usage: true}, view: {usage: true}}},
  {name: '-q shows uids only', flags: {quiet: true}, want: {view: {quiet: true}}},
  {name: 'the idle-limit, in seconds', settings: {idleLimitMs: 5_400_000}, want: {status: {idleLimitS: 5400}}},
]

describe('statusRequest', () => {
  it.each(ROWS)('$name', ({flags, named = [], settings, want}) => {
    expect(statusRequest({...FLAGS, ...flags}, named, {...SETTINGS, ...settings})).toEqual({
      selection: {...PLAIN.selection, ...want.selection},
      status: {...PLAIN.status, ...want.status},
      view: {...PLAIN.view, ...want.view},
    })
  })
})

describe('the selection of the commands over many VMs', () => {
  it.each([
    {flags: {vms: 'a, b,c'}, named: [], targets: ['a', 'b', 'c']},
    {flags: {}, named: ['worker1'], targets: ['worker1']},
    {flags: {}, named: [], targets: []},
  ])('targets of $flags and $named', ({flags, named, targets}) => {
    expect(selectionOf(flags, SETTINGS, named).targets).toEqual(targets)
  })

  it('refuses a --vms that names no VM (exit 2)', () => {
    expect(() => selectionOf({vms: ' , '}, SETTINGS)).toThrow(expect.objectContaining({exitCode: 2, message: '--vms names no VM'}))
  })

  it('takes --all, and --any-owner only where it is given', () => {
    expect(selectionOf({all: true}, {fleet: 'train', owner: 'ana'})).toEqual({
      all: true,
      fleet: 'train',
      fleetGiven: null,
      owners: {anyOwner: false, owner: 'ana'},
      targets: [],
    })
  })
})
