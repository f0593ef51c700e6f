// Fails on any import cycle among the TypeScript sources of the given directories, type-only imports included: a
// cycle, even through types, ties modules that should stand in layers. With --folders it also fails on a cycle between
// folders (a folder: the files directly in one directory), naming one file-level import for each step, so that the
// tree stays the architecture: src/lib/<layer>/<folder> imports only what stands below it. Run by npm run lint.
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

/**
 * The cycles between folders of an import graph: each as its folders around it, and for each step one import of a file
 * of the one folder from a file of the next that makes it.
 * @param {Map<string, string[]>} graph file -> files it imports
 * @returns {{folders: string[], edges: [string, string][]}[]}
 */
export function folderCyclesOf(graph) {
  const folders = new Map()
  const edgeOf = new Map()
  for (const [file, targets] of graph) {
    const from = dirname(file)
    if (!folders.has(from)) folders.set(from, new Set())
    for (const target of targets) {
      const to = dirname(target)
      if (to === from) continue
      folders.get(from).add(to)
      if (!edgeOf.has(`${from}\0${to}`)) edgeOf.set(`${from}\0${to}`, [file, target])
    }
  }

  const folderGraph = new Map([...folders].map(([folder, targets]) => [folder, [...targets]]))
  return cyclesOf(folderGraph).map((cycle) => ({
    edges: cycle.slice(1).map((to, step) => edgeOf.get(`${cycle[step]}\0${to}`)),
    folders: cycle,
  }))
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
  const args = process.argv.slice(2)
  const dirs = args.filter((arg) => arg !== '--folders')
  const name = (path) => relative(process.cwd(), path) || '.'
  let found = 0
  for (const dir of dirs) {
    const graph = importGraph(dir)
    for (const cycle of cyclesOf(graph)) {
      found++
      console.error(`import cycle: ${cycle.map(name).join(' -> ')}`)
    }

    if (!args.includes('--folders')) continue
    for (const {edges, folders} of folderCyclesOf(graph)) {
      found++
      console.error(`folder cycle: ${folders.map(name).join(' -> ')}`)
      for (const [from, to] of edges) console.error(`  ${name(from)} imports ${name(to)}`)
    }
  }

  process.exit(found > 0 ? 1 : 0)
}
