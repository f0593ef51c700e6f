/**
 * Prints the closing lines CI logs are read by: "fault scenarios: N/M clean" when the fault
 * matrix ran, then "tests: N passed, N failed, N skipped".
 */
import type {Reporter, TestModule} from 'vitest/node'

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counts = {failed: 0, passed: 0, skipped: 0}
    const faults = {clean: 0, total: 0}
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state
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
  }
}
