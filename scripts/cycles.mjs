// Fails on any import cycle among the TypeScript sources of the given directories, type-only imports included: a
// cycle, even through types, ties modules that should stand in layers. Run by npm run lint.
import {readFileSync, readdirSync} from 'node:fs'
import {dirname, join, relative, resolve} from 'node:path'

const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gms

/**
 * The cycles of an import graph, each as the list of files around it.
 * @param {Map<string, string[]>} graph file -> files it imports
 * @returns {string[][]}
 */
export function cyclesOf(graph) {
  const cycles = []
  const state = new Map()
  const stack = []
  const visit = (node) => {
    state.set(node, 'open')
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next])
      else if (!state.has(next)) visit(next)
    }

    stack.pop()
    state.set(node, 'done')
  }

  for (const node of graph.keys()) if (!state.has(node)) visit(node)
  return cycles
}

function importGraph(dir) {
  const root = resolve(dir)
  const files = new Set(
    readdirSync(root, {recursive: true})
      .filter((file) => String(file).endsWith('.ts'))
      .map((file) => join(root, String(file))),
  )
  const graph = new Map()
  for (const file of files) {
    const targets = [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((match) =>
      resolve(dirname(file), match[1].replace(/\.js$/, '.ts')),
    )
    graph.set(
      file,
      targets.filter((target) => files.has(target)),
    )
  }

  return graph
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const cycles = process.argv.slice(2).flatMap((dir) => cyclesOf(importGraph(dir)))
  for (const cycle of cycles) console.error(`import cycle: ${cycle.map((file) => relative(process.cwd(), file)).join(' -> ')}`)
  process.exit(cycles.length > 0 ? 1 : 0)
}
