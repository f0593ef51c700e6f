import {defineConfig} from 'vitest/config'

export default defineConfig({
  // As in the bundle (scripts/build.mjs): a shell script is imported as its text.
  plugins: [
    {name: 'shell-script-text', transform: (code, id) => (id.endsWith('.sh') ? `export default ${JSON.stringify(code)}` : undefined)},
  ],
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // One file at a time: the timing-sensitive scenarios (signals, boots) must not compete with 16 simulated VMs.
    maxWorkers: 1,
    globalSetup: ['./test/helpers/prerequisites.ts'],
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})
