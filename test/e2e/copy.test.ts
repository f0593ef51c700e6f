/**
 * `targon cp` on simulated VMs that are real SSH hosts (needs root, like exec.test.ts): trees up and back down
 * with their checksums, scp's placement rules, a fleet with one failing VM, refused input, path traversal from
 * the VM's side, and interrupted copies. The VMs are deleted at the end and the ledger must show nothing billing.
 */
import {appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, truncateSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {beforeAll, describe, expect, it} from 'vitest'

import {CONFIG_FILE_VARIANTS, errorLines, parseJson, tempDir} from '../helpers/cli.js'
import {expectOneRunInOrder, parseEvents} from '../helpers/events.js'
import {useVmFixture} from '../helpers/fixture.js'
import {tree} from '../helpers/files.js'

const simulated = useVmFixture({inProcess: true})
const {configDir, targon} = simulated
let vms: {name: string; uid: string}[] = []

beforeAll(async () => {
  const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--count', '3', '--fleet', 'cp', '--json'], {
    timeoutMs: 120_000,
  })
  expect(up.code, up.stdout + up.stderr).toBe(0)
  vms = parseJson(up).data.vms
}, 150_000)

async function onVm(vm: {name: string}, script: string): Promise<void> {
  const run = await targon(['exec', '--vms', vm.name, '--', script])
  expect(run.code, run.stdout + run.stderr).toBe(0)
}

/** Files whose names mark them as temporary copies. */
function partials(dir: string): string[] {
  return Object.keys(tree(dir)).filter((path) => path.includes('.targon-part-'))
}

function sampleTree(): string {
  const dir = tempDir('targon-cp-src-')
  mkdirSync(join(dir, 'in', 'a', 'b', 'deep'), {recursive: true})
  mkdirSync(join(dir, 'in', 'empty'))
  writeFileSync(join(dir, 'in', 'top.txt'), 'top\n')
  writeFileSync(join(dir, 'in', 'a', 'b', 'deep', 'data.bin'), Buffer.from(Array.from({length: 300_000}, (_, i) => (i * 7) % 251)))
  writeFileSync(join(dir, 'in', 'a', 'run.sh'), '#!/bin/sh\necho hi\n', {mode: 0o755})
  writeFileSync(join(dir, 'in', 'a', 'secret'), 'x', {mode: 0o600})
  writeFileSync(join(dir, 'in', "name with spaces & $quotes'"), 'odd\n')
  writeFileSync(join(dir, 'in', 'empty.txt'), '')
  return dir
}

describe('targon cp', () => {
  it('copies a directory tree up and back down: same structure, checksums and modes', async () => {
    const [vm] = vms
    const src = sampleTree()
    const up = await targon(['cp', join(src, 'in'), `${vm!.name}:/home/ubuntu/`, '--json'])
    expect(up.code, up.stdout + up.stderr).toBe(0)
    const upDoc = parseJson(up)
    expect(upDoc.data).toMatchObject({direction: 'upload', fleet: null})
    expect(upDoc.data.results).toMatchObject([
      {destination: `${vm!.name}:/home/ubuntu/in`, direction: 'upload', error: null, files: 6, ok: true, planned_files: 6, vm: vm!.name},
    ])
    expect(upDoc.data.results[0].bytes).toBe(300_000 + 4 + 18 + 1 + 4)
    expect(upDoc.data.results[0].copied).toContain('in/a/b/deep/data.bin')
    expect(readFileSync(join(simulated.farm.vm(vm!.uid).dir, 'upper/home/ubuntu/in/a/run.sh'), 'utf8')).toBe('#!/bin/sh\necho hi\n')

    const back = tempDir('targon-cp-back-')
    const down = await targon(['cp', `${vm!.name}:/home/ubuntu/in`, join(back, 'copy')])
    expect(down.code, down.stderr).toBe(0)
    expect(down.stdout).toMatch(new RegExp(`^${vm!.name}: downloaded 6 of 6 files \\(.*\\) in [\\d.]+ s to ${join(back, 'copy')}\\n$`))
    expect(tree(join(back, 'copy'))).toEqual(tree(join(src, 'in')))
    expect(tree(join(back, 'copy'))['a/run.sh']).toMatch(/ 755$/)
    expect(tree(join(back, 'copy'))['a/secret']).toMatch(/ 600$/)
    expect(tree(join(back, 'copy')).empty).toBe('dir')
  })

  it('places a single file as scp does: into an existing directory, or under a new name; a trailing / needs a directory', async () => {
    const [, vm] = vms
    const src = tempDir('targon-cp-file-')
    writeFileSync(join(src, 'notes.txt'), 'hello\n', {mode: 0o640})
    await onVm(vm!, 'mkdir -p /home/ubuntu/box')

    expect((await targon(['cp', join(src, 'notes.txt'), `${vm!.name}:/home/ubuntu/box`])).code).toBe(0)
    expect(simulated.farm.vm(vm!.uid).readFile('/home/ubuntu/box/notes.txt')).toBe('hello\n')
    expect((await targon(['cp', join(src, 'notes.txt'), `${vm!.name}:/home/ubuntu/renamed.txt`])).code).toBe(0)
    expect(simulated.farm.vm(vm!.uid).readFile('/home/ubuntu/renamed.txt')).toBe('hello\n')
    // A relative remote path is under the home directory; an existing file is replaced.
    writeFileSync(join(src, 'notes.txt'), 'second\n')
    expect((await targon(['cp', join(src, 'notes.txt'), `${vm!.name}:renamed.txt`])).code).toBe(0)
    expect(simulated.farm.vm(vm!.uid).readFile('/home/ubuntu/renamed.txt')).toBe('second\n')

    const slash = await targon(['cp', join(src, 'notes.txt'), `${vm!.name}:/home/ubuntu/nodir/`, '--json'])
    expect(slash.code).toBe(12)
    expect(parseJson(slash).data.results[0].error).toBe('/home/ubuntu/nodir/: no such directory')

    const local = tempDir('targon-cp-get-')
    expect((await targon(['cp', `${vm!.name}:/home/ubuntu/box/notes.txt`, local])).code).toBe(0)
    expect(readFileSync(join(local, 'notes.txt'), 'utf8')).toBe('hello\n')
    expect(statSync(join(local, 'notes.txt')).mode & 0o777).toBe(0o640)
    expect((await targon(['cp', `${vm!.name}:renamed.txt`, join(local, 'other.txt')])).code).toBe(0)
    expect(readFileSync(join(local, 'other.txt'), 'utf8')).toBe('second\n')
    expect(partials(local)).toEqual([])
  })

  it('downloads under the umask, as cp and scp do: under umask 077 files and directories of the VM arrive private', async () => {
    const [vm] = vms
    await onVm(
      vm!,
      'mkdir -p /home/ubuntu/open/sub && echo x > /home/ubuntu/open/sub/f && chmod 777 /home/ubuntu/open /home/ubuntu/open/sub /home/ubuntu/open/sub/f',
    )
    const local = tempDir('targon-cp-umask-')
    const get = await targon(['cp', `${vm!.name}:/home/ubuntu/open`, local], {umask: '077'})
    expect(get.code, get.stderr).toBe(0)
    for (const path of ['open', 'open/sub', 'open/sub/f']) expect(statSync(join(local, path)).mode & 0o777, path).toBe(0o700)
  })

  it('copies to every VM of a fleet; one unwritable destination makes exit 12 with per-VM results', async () => {
    const [bad, ...good] = vms
    for (const vm of vms) await onVm(vm, 'mkdir -p /home/ubuntu/drop')
    await onVm(bad!, 'chmod 555 /home/ubuntu/drop')
    const src = sampleTree()

    const json = await targon(['cp', join(src, 'in'), ':/home/ubuntu/drop', '--fleet', 'cp', '--json'])
    expect(json.code, json.stderr).toBe(12)
    const doc = parseJson(json)
    expect(doc.error).toMatchObject({code: 'COPY_FAILED', exit_code: 12})
    expect(doc.error.message).toContain(`the copy failed on 1 of 3 VMs: ${bad!.name} (`)
    expect(doc.data.fleet).toBe('cp')
    const results = new Map(doc.data.results.map((result: {vm: string}) => [result.vm, result]))
    expect(results.get(bad!.name)).toMatchObject({files: 0, ok: false, planned_files: 6})
    expect((results.get(bad!.name) as {error: string}).error).toBe(
      '/home/ubuntu/drop/in: permission denied on the VM (and 6 more not copied)',
    )
    for (const vm of good) {
      expect(results.get(vm.name)).toMatchObject({error: null, files: 6, ok: true})
      expect(simulated.farm.vm(vm.uid).readFile('/home/ubuntu/drop/in/a/b/deep/data.bin')).toBe(
        readFileSync(join(src, 'in/a/b/deep/data.bin'), 'utf8'),
      )
    }

    // Without --json: a line per VM on stdout, the failed entries and the error on stderr.
    const text = await targon(['cp', join(src, 'in', 'top.txt'), ':/home/ubuntu/drop/', '--fleet', 'cp'])
    expect(text.code).toBe(12)
    const lines = text.stdout.trimEnd().split('\n')
    expect(lines).toHaveLength(3)
    expect(lines.find((line) => line.startsWith(`${bad!.name}: `))).toMatch(
      /: FAILED, 0 of 1 files \(0 B\) in [\d.]+ s: .*permission denied on the VM$/,
    )
    for (const vm of good)
      expect(lines).toContainEqual(
        expect.stringMatching(new RegExp(`^${vm.name}: uploaded 1 of 1 files .* to ${vm.name}:/home/ubuntu/drop/top.txt$`)),
      )
    expect(text.stderr).toContain(`${bad!.name} | not copied: top.txt: /home/ubuntu/drop/top.txt: permission denied on the VM`)
    expect(text.stderr.trimEnd().split('\n').at(-1)).toMatch(/^Error: the copy failed on 1 of 3 VMs/)

    // --events-file: one transfer per VM, started then done or failed.
    const eventsFile = join(tempDir('targon-cp-events-'), 'cp.ndjson')
    const followed = await targon(['cp', join(src, 'in', 'top.txt'), ':/home/ubuntu/drop/', '--fleet', 'cp', '--events-file', eventsFile])
    expect(followed.code).toBe(12)
    const events = parseEvents(readFileSync(eventsFile, 'utf8'))
    expectOneRunInOrder(events)
    for (const vm of vms)
      expect(events.filter((event) => event.type === 'transfer' && event.vm?.uid === vm.uid).map((event) => event.status)).toEqual([
        'started',
        vm === bad ? 'failed' : 'done',
      ])

    // Downloads from a fleet never overwrite each other: DEST/<vm>/<name>.
    const out = tempDir('targon-cp-fleet-')
    const fetched = await targon(['cp', ':/home/ubuntu/drop', join(out, 'all'), '--fleet', 'cp', '--json'])
    expect(fetched.code, fetched.stdout).toBe(0)
    for (const vm of good) expect(tree(join(out, 'all', vm.name, 'drop', 'in'))).toEqual(tree(join(src, 'in')))
    expect(readdirSync(join(out, 'all')).sort()).toEqual(vms.map((vm) => vm.name).sort())
  })

  it('refuses bad input with one line: bad specs (2), a missing local path (4), an unknown VM (4), a missing remote path (12)', async () => {
    const [vm] = vms
    const src = tempDir('targon-cp-bad-')
    writeFileSync(join(src, 'f'), 'f')
    for (const args of [
      [join(src, 'f'), join(src, 'g')],
      [`${vm!.name}:/etc/hostname`, `${vm!.name}:/tmp/x`],
      [join(src, 'f')],
      [join(src, 'f'), `${vm!.name}:/tmp`, '--vms', vm!.name],
    ]) {
      const result = await targon(['cp', ...args])
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2)
      expect(errorLines(result.stderr), result.stderr).toHaveLength(1)
      expect(result.stdout).toBe('')
    }

    const neither = await targon(['cp', join(src, 'f'), join(src, 'g'), '--json'])
    expect(parseJson(neither).error).toMatchObject({code: 'USAGE', exit_code: 2})
    expect(parseJson(neither).error.message).toContain('is on a VM')

    const missing = await targon(['cp', join(src, 'nope'), `${vm!.name}:/home/ubuntu/`])
    expect(missing.code).toBe(4)
    expect(errorLines(missing.stderr)).toEqual([
      `Error: ${join(src, 'nope')}: no such file or directory. Hint: the local source must exist`,
    ])

    const noParent = await targon(['cp', `${vm!.name}:/etc/hostname`, join(src, 'no', 'such', 'dir')])
    expect(noParent.code).toBe(4)
    expect(errorLines(noParent.stderr)).toEqual([
      `Error: ${join(src, 'no', 'such')}: no such file or directory. Hint: the destination directory must exist`,
    ])

    // A destination ending in "/" must itself be an existing directory, also when given relative to the working directory.
    for (const dest of ['./missing/', join(src, 'missing') + '/']) {
      const noDir = await targon(['cp', `${vm!.name}:/etc/hostname`, dest], {cwd: src})
      expect(noDir.code, noDir.stderr).toBe(4)
      expect(errorLines(noDir.stderr)).toEqual([
        `Error: ${dest}: no such directory. Hint: a destination ending in "/" must be an existing directory`,
      ])
    }

    // A local path that cannot be reached (here a loop of links) is not "missing", and not a bug.
    const loop = join(tempDir('targon-cp-loop-'), 'loop')
    symlinkSync('loop', loop)
    for (const args of [
      [loop, `${vm!.name}:/tmp/`],
      [`${vm!.name}:/etc/hostname`, join(loop, 'sub')],
    ]) {
      const looped = await targon(['cp', ...args, '--json'])
      expect(looped.code, looped.stdout).toBe(12)
      expect(parseJson(looped).error).toMatchObject({
        code: 'COPY_FAILED',
        message: `${args.find((arg) => arg.startsWith(loop))}: too many levels of symbolic links locally`,
      })
    }

    const unknown = await targon(['cp', join(src, 'f'), 'tcli-cp-nosuchvm:/tmp/'])
    expect(unknown.code).toBe(4)
    expect(errorLines(unknown.stderr)).toHaveLength(1)
    expect(unknown.stderr).toContain('no VM named or with uid tcli-cp-nosuchvm')

    const remote = await targon(['cp', `${vm!.name}:/home/ubuntu/nope`, src])
    expect(remote.code).toBe(12)
    expect(remote.stderr.trim().split('\n').at(-1)).toBe(
      `Error: the copy failed on ${vm!.name} (/home/ubuntu/nope: no such file or directory on the VM). Hint: see the per-VM results (copied, failed); files under their final names are whole`,
    )
    expect(remote.stderr).not.toMatch(/\n\s+at /)

    const denied = await targon(['cp', `${vm!.name}:/etc/shadow`, src, '--json'])
    expect(denied.code).toBe(12)
    expect(parseJson(denied).data.results[0]).toMatchObject({error: '/etc/shadow: permission denied on the VM', files: 0, ok: false})
    expect(existsSync(join(src, 'shadow'))).toBe(false)
    expect(partials(src)).toEqual([])
  })

  it('never follows a link on the VM out of the tree, nor a local link in the destination', async () => {
    const [vm] = vms
    await onVm(
      vm!,
      [
        'mkdir -p /home/ubuntu/trap/sub',
        'echo inside > /home/ubuntu/trap/sub/ok.txt',
        'ln -s /etc /home/ubuntu/trap/etc',
        'ln -s ../../../../../../tmp /home/ubuntu/trap/sub/up',
        'ln -s /etc/hostname /home/ubuntu/trap/host',
      ].join(' && '),
    )
    const outside = tempDir('targon-cp-outside-')
    const dest = tempDir('targon-cp-dest-')
    // A link already in the destination, where the VM's directory "sub" would go.
    mkdirSync(join(dest, 'trap'))
    symlinkSync(outside, join(dest, 'trap', 'sub'))

    const result = await targon(['cp', `${vm!.name}:/home/ubuntu/trap`, dest, '--json'])
    expect(result.code).toBe(12)
    const doc = parseJson(result)
    const vmResult = doc.data.results[0]
    expect(vmResult.skipped.map((entry: {path: string}) => entry.path).sort()).toEqual(['trap/etc', 'trap/host', 'trap/sub/up'])
    expect(vmResult.failed.map((entry: {path: string}) => entry.path)).toEqual(['trap/sub', 'trap/sub/ok.txt'])
    expect(vmResult.failed[0].error).toBe(`${join(dest, 'trap', 'sub')}: is a symbolic link locally; not followed`)
    expect(doc.warnings).toContain(`${vm!.name}: skipped trap/etc: a symbolic link (not followed)`)
    expect(readdirSync(outside)).toEqual([])
    expect(tree(dest)).toEqual({trap: 'dir', 'trap/sub': 'dir'})

    // Without the local link, everything but the links arrives, and the run succeeds with warnings.
    const clean = tempDir('targon-cp-clean-')
    const ok = await targon(['cp', `${vm!.name}:/home/ubuntu/trap`, clean])
    expect(ok.code, ok.stderr).toBe(0)
    expect(ok.stderr).toContain('Warning: ')
    expect(tree(clean)).toEqual({trap: 'dir', 'trap/sub': 'dir', 'trap/sub/ok.txt': expect.stringMatching(/ 6[46]4$/)})
  })

  it('takes "." and the home directory as roots, run from a working directory', async () => {
    const [, , vm] = vms
    // Download the whole home directory: an empty PATH is the home directory.
    const cwd = tempDir('targon-cp-cwd-')
    const home = await targon(['cp', `${vm!.name}:`, './bak', '--json'], {cwd})
    expect(home.code, home.stdout + home.stderr).toBe(0)
    expect(parseJson(home).data.results[0]).toMatchObject({destination: './bak', ok: true})
    expect(readFileSync(join(cwd, 'bak', 'drop', 'top.txt'), 'utf8')).toBe('top\n')

    // Upload the working directory itself.
    const here = tempDir('targon-cp-here-')
    mkdirSync(join(here, 'sub'))
    writeFileSync(join(here, 'sub', 'f.txt'), 'from here\n')
    const up = await targon(['cp', '.', `${vm!.name}:/home/ubuntu/p`], {cwd: here})
    expect(up.code, up.stderr).toBe(0)
    expect(simulated.farm.vm(vm!.uid).readFile('/home/ubuntu/p/sub/f.txt')).toBe('from here\n')

    // From a fleet into the working directory: ./<vm>/<name>.
    const all = tempDir('targon-cp-all-')
    const fleet = await targon(['cp', ':/home/ubuntu/drop', '.', '--fleet', 'cp'], {cwd: all})
    expect(fleet.code, fleet.stderr).toBe(0)
    expect(readdirSync(all).sort()).toEqual(vms.map((each) => each.name).sort())
    expect(readFileSync(join(all, vm!.name, 'drop', 'top.txt'), 'utf8')).toBe('top\n')
  })

  it('fails a file that grows while it is copied, and never leaves it under its final name', async () => {
    const [, vm] = vms
    const src = tempDir('targon-cp-grow-')
    writeFileSync(join(src, 'growing.bin'), '')
    truncateSync(join(src, 'growing.bin'), 200 * 1024 * 1024)
    const home = join(simulated.farm.vm(vm!.uid).dir, 'upper/home/ubuntu')
    const grown = await targon(['cp', join(src, 'growing.bin'), `${vm!.name}:/home/ubuntu/`, '--json'], {
      onSpawn: () => {
        const timer = setInterval(() => {
          const part = readdirSync(home).find((name) => name.includes('.targon-part-'))
          if (part && statSync(join(home, part)).size > 1_000_000) {
            clearInterval(timer)
            appendFileSync(join(src, 'growing.bin'), 'more')
          }
        }, 20)
      },
    })
    expect(grown.code, grown.stdout).toBe(12)
    expect(parseJson(grown).data.results[0]).toMatchObject({
      error: `${join(src, 'growing.bin')}: changed while being copied locally`,
      failed: [{error: `${join(src, 'growing.bin')}: changed while being copied locally`, path: 'growing.bin'}],
      files: 0,
      ok: false,
    })
    expect(existsSync(join(home, 'growing.bin'))).toBe(false)
    expect(readdirSync(home).filter((name) => name.includes('.targon-part-'))).toEqual([])
  })

  it('an interrupted copy exits non-zero and leaves no partial file under its final name', async () => {
    const [vm] = vms
    await onVm(vm!, 'truncate -s 400M /home/ubuntu/big.bin && echo small > /home/ubuntu/small.txt')

    // The connection drops during a download.
    const dest = tempDir('targon-cp-drop-')
    const dropped = await targon(['cp', `${vm!.name}:/home/ubuntu/big.bin`, dest, '--json'], {
      onSpawn: () => {
        const timer = setInterval(() => {
          const part = readdirSync(dest).find((name) => name.includes('.targon-part-'))
          if (part && statSync(join(dest, part)).size > 1_000_000) {
            clearInterval(timer)
            simulated.farm.vm(vm!.uid).dropConnections()
          }
        }, 20)
      },
    })
    expect(dropped.code, dropped.stdout).toBe(12)
    expect(parseJson(dropped).data.results[0]).toMatchObject({files: 0, ok: false})
    expect(readdirSync(dest)).toEqual([])

    // Ctrl-C during an upload: exit 130, the VM has only the temporary name (cleaned up), never the final one. Without
    // and then with a config.json in the config directory.
    for (const variant of CONFIG_FILE_VARIANTS) {
      variant.prepare(configDir)
      const src = tempDir('targon-cp-sigint-')
      writeFileSync(join(src, 'huge.bin'), '')
      truncateSync(join(src, 'huge.bin'), 400 * 1024 * 1024)
      const home = join(simulated.farm.vm(vm!.uid).dir, 'upper/home/ubuntu')
      const interrupted = await targon(['cp', join(src, 'huge.bin'), `${vm!.name}:/home/ubuntu/`, '--json'], {
        onSpawn: (child) => {
          const timer = setInterval(() => {
            const part = readdirSync(home).find((name) => name.includes('.targon-part-'))
            if (part && statSync(join(home, part)).size > 1_000_000) {
              clearInterval(timer)
              child.kill('SIGINT')
            }
          }, 20)
        },
      })
      expect(interrupted.code, interrupted.stdout).toBe(130)
      const doc = parseJson(interrupted)
      expect(doc.error.code).toBe('INTERRUPTED')
      expect(doc.data.results[0]).toMatchObject({error: 'interrupted after 0 of 1 files', files: 0, ok: false})
      expect(existsSync(join(home, 'huge.bin'))).toBe(false)
      expect(readdirSync(home).filter((name) => name.includes('.targon-part-'))).toEqual([])
    }
  })

  it('deleting the VMs leaves nothing billing', async () => {
    const down = await targon(['down', '--fleet', 'cp', '--yes', '--json'], {timeoutMs: 120_000})
    expect(down.code, down.stdout).toBe(0)
    expect(simulated.sim.billing()).toEqual([])
  })
})
