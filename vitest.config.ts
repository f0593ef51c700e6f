import {configDefaults, defineConfig} from 'vitest/config'

// The files that must run alone: 16 simulated VMs at once (their timing would starve the others on 2 cores), and
// a global npm install.
const ALONE = ['test/e2e/scale.test.ts', 'test/e2e/package.test.ts']
// Logic alone, in process: any user, no root, no network.
const UNIT = ['test/unit/**/*.test.ts']
// The commands against the simulator, without simulated VMs: any user, no root.
const CMD = ['test/cmd/**/*.test.ts']
// The simulated VMs (test/vm) need root and the tools of scripts/prerequisites.sh: checked once, before these.
const NEEDS_ROOT = {globalSetup: ['./test/helpers/prerequisites.ts']}

// The tiers of npm test, one vitest project each. Tiers of one group run alongside each other, so with the same
// number of workers (vitest requires it).
const PROJECTS = [
  {name: 'unit', include: UNIT, maxWorkers: 4, sequence: {groupOrder: 0}},
  {name: 'cmd', include: CMD, maxWorkers: 4, sequence: {groupOrder: 0}},
  {
    ...NEEDS_ROOT,
    name: 'shared',
    include: ['test/**/*.test.ts'],
    // The soak runs outside npm test (npm run soak, vitest.soak.config.ts).
    exclude: [...configDefaults.exclude, ...ALONE, ...UNIT, ...CMD, 'test/soak/**'],
    // Four files at a time on 2 cores: most of a test's time is spent waiting on timers, boots and sshd, not on the
    // CPU. Measured with /usr/bin/time: the fault matrix used 122 s of CPU for about 500 s of tests, unit and cmd 117 s
    // for about 290 s, hardening 44 s for 112 s; so a busy worker needs 0.25 to 0.4 of a core, and four about 1 to 1.6.
    // The fault matrix alone (four files) took 524 s with three and 236 s with four, 114 of 114 clean both times, on a
    // machine loaded by other work. (Earlier: 461 s with three, 585 s with two, for the same tests.)
    maxWorkers: 4,
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
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: PROJECTS.map((project) => ({extends: true, test: project})),
  },
})
