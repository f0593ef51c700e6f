import {configDefaults, defineConfig} from 'vitest/config'

import {HeaviestFirst} from './test/helpers/sequencer.js'

// The file that must run alone: 16 simulated VMs at once, whose boots would starve the others on 2 cores. (The
// package's install into an empty prefix and the API's scale tests run beside the others: what they check holds under
// load.)
const ALONE = ['test/e2e/scale.test.ts']
// Logic alone, in process: any user, no root, no network.
const UNIT = ['test/unit/**/*.test.ts']
// The commands against the simulator, without simulated VMs: any user, no root.
const CMD = ['test/cmd/**/*.test.ts']
// The simulated VMs (test/vm) need root and the tools of scripts/prerequisites.sh: checked once, before these.
const NEEDS_ROOT = {globalSetup: ['./test/helpers/prerequisites.ts']}

// The tiers of npm test, one vitest project each. Tiers of one group run alongside each other, so with the same
// number of workers (vitest requires it). Without isolation a worker keeps the modules it loaded for its next file:
// most files run the CLI in process, and loading its sources once per file cost more CPU than the tests (a whole run
// took 714 s isolated and 592 s not, both 1,346 of 1,346 green; unit and cmd alone 133 s and 71 s). A file that
// changes process.env or the working directory puts them back (lint refuses a new process.env object).
const PROJECTS = [
  {name: 'unit', include: UNIT, maxWorkers: 4, isolate: false, sequence: {groupOrder: 0}},
  {name: 'cmd', include: CMD, maxWorkers: 4, isolate: false, sequence: {groupOrder: 0}},
  {
    ...NEEDS_ROOT,
    name: 'shared',
    include: ['test/**/*.test.ts'],
    // The soak runs outside npm test (npm run soak, vitest.soak.config.ts).
    exclude: [...configDefaults.exclude, ...ALONE, ...UNIT, ...CMD, 'test/soak/**'],
    // Four files at a time on 2 cores: most of a test's time is spent waiting on timers, boots and sshd, not on the
    // CPU. A whole run used about 60 % of two cores with four (process accounting), and six were no faster (709 s
    // against 714 s, the tests' own time up by half): the CPU is short in bursts, when VMs boot and files load.
    maxWorkers: 4,
    isolate: false,
    sequence: {groupOrder: 0},
  },
  {...NEEDS_ROOT, name: 'alone', include: ALONE, maxWorkers: 1, sequence: {groupOrder: 1}},
]

/**
 * Without root npm test runs the tiers that do not need it (scripts/test.sh); the summary reporter says which tiers
 * ran and which did not, and .ci/run fails unless all did.
 */
export const TIERS = PROJECTS.map((project) => ({name: project.name, needsRoot: 'globalSetup' in project}))

export default defineConfig({
  // As in the bundle (scripts/build.mjs): a shell or Python script is imported as its text.
  plugins: [
    {
      name: 'script-text',
      transform: (code, id) => (id.endsWith('.sh') || id.endsWith('.py') ? `export default ${JSON.stringify(code)}` : undefined),
    },
  ],
  test: {
    pool: 'forks',
    sequence: {sequencer: HeaviestFirst},
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: PROJECTS.map((project) => ({extends: true, test: project})),
  },
})
