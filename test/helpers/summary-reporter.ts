/**
 * Prints the closing lines CI logs are read by: "fault scenarios: N/M clean" when the fault
 * matrix ran, "tests: N passed, N failed, N skipped", then the tiers of vitest.config.ts that ran and
 * those that did not ("tiers not run: none" when all did, which .ci/run requires). Without root, a
 * tier left to root is also named on stderr with how to run it.
 */
import type {Reporter, TestModule} from 'vitest/node'
import {TIERS} from '../../vitest.config.js'

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counts = {failed: 0, passed: 0, skipped: 0}
    const faults = {clean: 0, total: 0}
    const tiersRun = new Set<string>()
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state
        // A tier ran when at least one of its tests did, not when its files were only collected (-t, .skip).
        if (state === 'passed' || state === 'failed') tiersRun.add(module.project.name)
        if (test.name.startsWith('fault: ') && (state === 'passed' || state === 'failed')) {
          faults.total++
          if (state === 'passed') faults.clean++
        }

        if (state === 'passed') counts.passed++
        else if (state === 'failed') counts.failed++
        else counts.skipped++
      }
    }

    if (faults.total > 0) process.stdout.write(`\nfault scenarios: ${faults.clean}/${faults.total} clean`)
    process.stdout.write(`\ntests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`)
    const notRun = TIERS.filter((tier) => !tiersRun.has(tier.name))
    process.stdout.write(`tiers run: ${[...tiersRun].join(', ') || 'none'}\n`)
    process.stdout.write(`tiers not run: ${notRun.map((tier) => tier.name).join(', ') || 'none'}\n`)
    const leftToRoot = notRun.filter((tier) => tier.needsRoot).map((tier) => tier.name)
    if (leftToRoot.length > 0 && process.getuid?.() !== 0)
      process.stderr.write(
        `left to root: the ${leftToRoot.join(' and ')} tiers (end-to-end, on simulated VMs: namespaces, sshd, a second local user); run npm test as root to run them too, as CI does\n`,
      )
  }
}
