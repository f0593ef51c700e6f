import {defineConfig} from 'vitest/config'

// The seeded chaos soak (npm run soak): outside npm test, which proves each fault once in the fault matrix; the soak
// proves that many rounds of them together still leave nothing billing, and replays a failing seed.
export default defineConfig({
  test: {
    include: ['test/soak/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 600_000,
  },
})
