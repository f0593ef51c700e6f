import {defineConfig} from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // The end-to-end tests mostly wait on subprocesses and simulated VMs: two files at a time even on 2 cores.
    maxWorkers: 2,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
})
