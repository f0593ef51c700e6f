/**
 * The order in which vitest hands test files to its workers: the longest first, so that no long file starts last and
 * keeps the run going alone. vitest's own order (without a cache of earlier runs, as in a fresh clone) goes project
 * by project and, in one, by the size of the file: the three files of the fault matrix's VM part, 3 lines each
 * around the 2,000 of fault-matrix.ts, came last and ran for two minutes while the other workers had little left to
 * do.
 *
 * A file's weight is its size plus that of the test modules it imports (not the shared helpers every file uses):
 * the matrix, a file's shared steps. Groups and projects keep vitest's order: a worker that moves to another project
 * loads the sources anew (with projects mixed, vitest's import time rose from 50 s to 150 s in one run).
 */
import {readFileSync, statSync} from 'node:fs'
import {dirname, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'
import {BaseSequencer, type TestSpecification} from 'vitest/node'

const TESTS = fileURLToPath(new URL('..', import.meta.url))
const HELPERS = fileURLToPath(new URL('.', import.meta.url))
const RELATIVE_IMPORT = /from '(\.{1,2}\/[^']+)\.js'/g

/** The bytes of a test file and of the test modules it imports, helpers aside. */
export function weightOf(file: string): number {
  const imported = [...readFileSync(file, 'utf8').matchAll(RELATIVE_IMPORT)]
    .map((match) => resolve(dirname(file), `${match[1]}.ts`))
    .filter((module) => module.startsWith(TESTS) && !module.startsWith(HELPERS))
  return [file, ...imported].reduce((sum, module) => sum + sizeOf(module), 0)
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size
  } catch {
    return 0
  }
}

export class HeaviestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const weights = new Map(files.map((spec) => [spec.moduleId, weightOf(spec.moduleId)]))
    return [...files].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        a.project.name.localeCompare(b.project.name) ||
        (weights.get(b.moduleId) ?? 0) - (weights.get(a.moduleId) ?? 0),
    )
  }
}
