/**
 * The sync engine on a simulated VM that is a real SSH host (needs root, like copy.test.ts), over the VM's pinned
 * connection as `targon run` opens it: what the ignore rules keep away never arrives, a second sync sends only what
 * changed and leaves what the VM made, a file gone locally goes on the VM, and a hostile manifest on the VM is
 * refused without anything removed or followed.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import {setTimeout as sleep} from 'node:timers/promises'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {openPinned} from '../../src/lib/adapters/ssh/connect-info.js'
import {checkedPrivateKeyPath} from '../../src/lib/adapters/ssh/project-key.js'
import {type SshSession, shellQuote} from '../../src/lib/adapters/ssh/session.js'
import {type SyncOptions, type SyncReport, syncWorkdir} from '../../src/lib/workflows/sync/sync.js'
import {tempDir} from '../helpers/cli.js'
import {tree} from '../helpers/files.js'
import {useVmFixture} from '../helpers/fixture.js'
import type {SimVm} from '../vm/farm.js'

const simulated = useVmFixture({inProcess: true, defaults: {timeoutMs: 120_000}})
const {configDir} = simulated
let vm: SimVm
let session: SshSession

beforeAll(async () => {
  const up = await simulated.targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--name', 'sync', '--json'])
  expect(up.code, up.stdout + up.stderr).toBe(0)
  vm = simulated.farm.vm(up.json.data.vms[0].uid)
  session = await reconnect()
}, 150_000)

/** An SSH session to the VM as `targon run` opens one: the project key, the VM's pinned host key. */
function reconnect(): Promise<SshSession> {
  return openPinned(
    {configDir, host: '127.0.0.1', identityFile: checkedPrivateKeyPath(configDir), name: 'sync', port: vm.port, uid: vm.uid},
    () => undefined,
    {deadlineMs: 30_000},
  )
}

afterAll(() => session?.close())

/** A path on the VM as the host sees it (the VM's own changes live in its overlay's upper layer). */
const onHost = (path: string) => join(vm.dir, 'upper', path)

async function onVm(script: string): Promise<void> {
  const run = await session.exec(script)
  expect(run.code, run.stdout + run.stderr).toBe(0)
}

let pairs = 0
/** A fresh local directory and the (remote directory, manifest) pair `targon run` would give it. */
function pair(): SyncOptions & {warnings: string[]} {
  const id = `pair${++pairs}`
  const warnings: string[] = []
  return {
    localDir: tempDir('targon-sync-'),
    manifestPath: `/home/ubuntu/.targon/sync/${id}.json`,
    neverSent: [],
    remoteDir: `/home/ubuntu/targon/work/${id}`,
    warn: (message) => warnings.push(message),
    warnings,
  }
}

function write(dir: string, path: string, content: string | Buffer, mode = 0o644): void {
  mkdirSync(join(dir, path, '..'), {recursive: true})
  writeFileSync(join(dir, path), content, {mode})
  chmodSync(join(dir, path), mode)
}

/** A project with code, ignored data, a secret, git's own directory, earlier outputs and a link. */
function project(dir: string): void {
  write(dir, 'train.py', 'print("train")\n')
  write(dir, 'run.sh', '#!/bin/sh\npython3 train.py\n', 0o755)
  write(dir, 'lib/model.py', 'class Model: pass\n')
  write(dir, 'lib/util.py', 'def f(): return 1\n')
  write(dir, "notes/name with spaces & $quotes'.txt", 'odd name\n')
  write(dir, '.gitignore', 'data/\n*.log\n!keep.log\n')
  write(dir, '.targonignore', 'secrets.env\n')
  write(dir, 'data/big.bin', Buffer.alloc(3 * 1024 * 1024, 7))
  write(dir, 'debug.log', 'noise\n')
  write(dir, 'keep.log', 'kept\n')
  write(dir, 'secrets.env', 'API_TOKEN=do-not-send\n')
  write(dir, '.git/config', '[core]\n')
  write(dir, 'targon-out/job1/result.txt', 'earlier output\n')
  symlinkSync('/etc/hostname', join(dir, 'hostname-link'))
}

const SENT = [
  '.gitignore',
  '.targonignore',
  'keep.log',
  'lib/model.py',
  'lib/util.py',
  "notes/name with spaces & $quotes'.txt",
  'run.sh',
  'train.py',
]

function files(dir: string): Record<string, string> {
  return Object.fromEntries(Object.entries(tree(dir)).filter(([, value]) => value !== 'dir'))
}

/** A sync with its manifest written, as the next one reads it. */
async function syncAll(session: SshSession, options: SyncOptions): Promise<SyncReport> {
  const synced = await syncWorkdir(session, options)
  await synced.manifest
  return synced.report
}

describe('syncWorkdir', () => {
  it('honours the ignore rules: ignored data, a .targonignore secret, .git, targon-out and links never reach the VM', async () => {
    const options = pair()
    project(options.localDir)
    const report = await syncAll(session, options)
    const sentBytes = SENT.reduce((sum, rel) => sum + statSync(join(options.localDir, rel)).size, 0)
    expect(report).toEqual({bytes_sent: sentBytes, files_removed: 0, files_sent: SENT.length, links_skipped: 1})
    expect(options.warnings).toEqual(['hostname-link: not synced: a symbolic link (not followed)'])
    const remote = files(onHost(options.remoteDir))
    expect(Object.keys(remote).sort()).toEqual(SENT)
    for (const rel of SENT) expect(remote[rel], rel).toBe(files(options.localDir)[rel])
    expect(remote['run.sh']).toMatch(/ 755$/)
    // The VM keeps the local mtime (in whole seconds), so that the next sync can compare; the manifest is outside the tree.
    expect(Math.floor(statSync(onHost(`${options.remoteDir}/train.py`)).mtimeMs / 1000)).toBe(
      Math.floor(statSync(join(options.localDir, 'train.py')).mtimeMs / 1000),
    )
    const manifest = JSON.parse(readFileSync(onHost(options.manifestPath), 'utf8'))
    expect(Object.keys(manifest.files).sort()).toEqual(SENT)
    expect(statSync(onHost(options.manifestPath)).mode & 0o777).toBe(0o600)
  })

  it('sends only what changed the second time, and never removes what the VM made', async () => {
    const options = pair()
    project(options.localDir)
    await syncAll(session, options)
    await onVm(
      `cd ${options.remoteDir} && mkdir -p out && echo made > out/result.txt && echo vm > vm-made.log && echo data > lib/cache.bin`,
    )
    // One real change (same size, so only the contents tell); one file touched but the same; one made executable.
    const later = Date.now() / 1000 + 5
    write(options.localDir, 'lib/util.py', 'def f(): return 2\n')
    utimesSync(join(options.localDir, 'lib/util.py'), later, later)
    utimesSync(join(options.localDir, "notes/name with spaces & $quotes'.txt"), later, later)
    chmodSync(join(options.localDir, 'train.py'), 0o755)
    const second = await syncAll(session, options)
    expect(second).toEqual({bytes_sent: 18, files_removed: 0, files_sent: 1, links_skipped: 1})
    const remote = tree(onHost(options.remoteDir))
    expect(readFileSync(onHost(`${options.remoteDir}/lib/util.py`), 'utf8')).toBe('def f(): return 2\n')
    expect(remote['train.py']).toMatch(/ 755$/)
    expect(Math.floor(statSync(onHost(`${options.remoteDir}/notes/name with spaces & $quotes'.txt`)).mtimeMs / 1000)).toBe(
      Math.floor(later),
    )
    for (const made of ['out/result.txt', 'vm-made.log', 'lib/cache.bin']) expect(remote[made], made).toBeDefined()

    // Size and time that agree on both sides are trusted without reading the file: a change on the VM that keeps
    // both goes unnoticed (as with rsync), which shows that nothing was hashed.
    const mtime = Math.floor(statSync(join(options.localDir, 'train.py')).mtimeMs / 1000)
    await onVm(`cd ${options.remoteDir} && printf 'print("TRAIN")\\n' > train.py && touch -d @${mtime} train.py`)
    const third = await syncAll(session, options)
    expect(third).toMatchObject({bytes_sent: 0, files_removed: 0, files_sent: 0})
    expect(readFileSync(onHost(`${options.remoteDir}/train.py`), 'utf8')).toBe('print("TRAIN")\n')
    // A local touch makes the contents decide: the VM's side by the hash recorded when the file was placed, as long
    // as the VM's file keeps the size and time it was placed with (so the change above still goes unnoticed)...
    utimesSync(join(options.localDir, 'train.py'), later + 1, later + 1)
    expect(await syncAll(session, options)).toMatchObject({files_sent: 0})
    expect(readFileSync(onHost(`${options.remoteDir}/train.py`), 'utf8')).toBe('print("TRAIN")\n')
    // ...and by the VM's own hash once its time differs: a change there that kept the size is found and undone.
    await onVm(`cd ${options.remoteDir} && printf 'print("TRAIN")\\n' > train.py`)
    utimesSync(join(options.localDir, 'train.py'), later + 2, later + 2)
    expect(await syncAll(session, options)).toMatchObject({files_sent: 1})
    expect(readFileSync(onHost(`${options.remoteDir}/train.py`), 'utf8')).toBe('print("train")\n')
  })

  it('removes on the VM a file it sent that is gone locally, but leaves one changed on the VM and one now ignored', async () => {
    const options = pair()
    project(options.localDir)
    await syncAll(session, options)
    await onVm(`cd ${options.remoteDir} && echo 'changed on the VM' >> lib/model.py && echo mine > mine.txt`)
    rmSync(join(options.localDir, 'train.py'))
    rmSync(join(options.localDir, 'lib/model.py'))
    // Still here, but ignored from now on: not gone, so it stays on the VM.
    writeFileSync(join(options.localDir, '.targonignore'), 'secrets.env\nrun.sh\n')
    const report = await syncAll(session, options)
    expect(report).toMatchObject({files_removed: 1, files_sent: 1})
    const remote = files(onHost(options.remoteDir))
    expect(remote['train.py']).toBeUndefined()
    expect(Object.keys(remote)).toEqual(expect.arrayContaining(['lib/model.py', 'mine.txt', 'run.sh']))
    expect(options.warnings).toContain('lib/model.py: left on the VM: gone locally, but changed there since it was synced')

    // run.sh stays recorded: once gone locally, it goes on the VM too.
    rmSync(join(options.localDir, 'run.sh'))
    expect(await syncAll(session, options)).toMatchObject({files_removed: 1, files_sent: 0})
    expect(files(onHost(options.remoteDir))['run.sh']).toBeUndefined()
  })

  it.each([
    ['a path that climbs out', (victim: {size: number; mtime_ms: number}) => manifestText({'../victim.txt': victim, 'victim.txt': victim})],
    [
      'an absolute path',
      (victim: {size: number; mtime_ms: number}) => manifestText({'/home/ubuntu/victim.txt': victim, 'victim.txt': victim}),
    ],
    ['a control character', (victim: {size: number; mtime_ms: number}) => manifestText({'victim.txt': victim, 'x\ny': victim})],
    ['an unknown field', (victim: {size: number; mtime_ms: number}) => manifestText({'victim.txt': {...victim, run: 'rm -rf ~'}})],
    ['not JSON', () => '{"format": "targon-sync-manifest", '],
  ])('refuses a manifest with %s: sends everything, removes nothing', async (_what, hostile) => {
    const options = pair()
    project(options.localDir)
    await syncAll(session, options)
    // Files the VM made, which the hostile manifest claims the sync sent (and which are not there locally).
    await onVm(`echo victim > /home/ubuntu/victim.txt && echo victim > ${options.remoteDir}/victim.txt`)
    const made = statSync(onHost(`${options.remoteDir}/victim.txt`))
    const text = hostile({mtime_ms: made.mtimeMs, size: made.size})
    await onVm(`printf '%s' ${shellQuote(text)} > ${options.manifestPath}`)
    const report = await syncAll(session, options)
    expect(report).toEqual(expect.objectContaining({files_removed: 0, files_sent: SENT.length}))
    expect(
      options.warnings.some((warning) => warning.startsWith(`the sync manifest on the VM (${options.manifestPath}) is refused: `)),
    ).toBe(true)
    expect(readFileSync(onHost('/home/ubuntu/victim.txt'), 'utf8')).toBe('victim\n')
    expect(readFileSync(onHost(`${options.remoteDir}/victim.txt`), 'utf8')).toBe('victim\n')
    // A good manifest replaces it.
    expect(Object.keys(JSON.parse(readFileSync(onHost(options.manifestPath), 'utf8')).files).sort()).toEqual(SENT)
  })

  it('refuses a manifest that is a link, and replaces the link instead of writing through it', async () => {
    const options = pair()
    project(options.localDir)
    await onVm(
      `mkdir -p /home/ubuntu/.targon/sync && echo precious > /home/ubuntu/precious && ln -s /home/ubuntu/precious ${options.manifestPath}`,
    )
    const report = await syncAll(session, options)
    expect(report.files_sent).toBe(SENT.length)
    expect(options.warnings).toContain(
      `the sync manifest on the VM (${options.manifestPath}) is refused: not a regular file; sending every file and removing none`,
    )
    expect(readFileSync(onHost('/home/ubuntu/precious'), 'utf8')).toBe('precious\n')
    expect(JSON.parse(readFileSync(onHost(options.manifestPath), 'utf8')).format).toBe('targon-sync-manifest')
  })

  it('leaves no temporary manifest behind when the manifest cannot be put in place', async () => {
    const options = pair()
    project(options.localDir)
    await onVm(`mkdir -p ${options.manifestPath}/taken`)
    // The files are in place when the sync returns; the manifest's write fails after.
    const synced = await syncWorkdir(session, options)
    const written = expect(synced.manifest).rejects.toMatchObject({code: 'COPY_FAILED'})
    expect(Object.keys(files(onHost(options.remoteDir)))).toHaveLength(synced.report.files_sent)
    await written
    expect(readdirSync(onHost('/home/ubuntu/.targon/sync')).filter((name) => name.includes('.targon-part-'))).toEqual([])
  })

  it('stops when the connection drops, leaving whole files only; the next sync sends just the rest', async () => {
    const options = pair()
    for (let index = 0; index < 40; index++) write(options.localDir, `shard${index}.bin`, Buffer.alloc(1024 * 1024, index))
    const remoteDir = onHost(options.remoteDir)
    const first = syncAll(session, options)
    // The drop comes once the first file is in place.
    while (!existsSync(remoteDir) || !readdirSync(remoteDir).some((name) => name.startsWith('shard'))) await sleep(20)
    vm.dropConnections()
    await expect(first).rejects.toThrow(/the SSH connection to the VM was lost|the SFTP session on the VM ended/)
    session = await reconnect()
    // Once the VM's SFTP server of the dropped connection has done what it had been asked (a rename may still come).
    await sleep(500)
    const placed = readdirSync(remoteDir).filter((name) => name.startsWith('shard'))
    for (const name of placed) expect(statSync(join(remoteDir, name)).size, name).toBe(1024 * 1024)
    const second = await syncAll(session, options)
    expect(second.files_sent).toBe(40 - placed.length)
    expect(placed.length).toBeGreaterThan(0)
    // Temporary copies the drop left behind are gone too.
    expect(files(remoteDir)).toEqual(files(options.localDir))
  })

  it('stops at an interrupt with a manifest of what is in place, so that the next sync sends just the rest', async () => {
    const options = pair()
    for (let index = 0; index < 40; index++) write(options.localDir, `shard${index}.bin`, Buffer.alloc(1024 * 1024, index))
    const remoteDir = onHost(options.remoteDir)
    const controller = new AbortController()
    const first = syncAll(session, {...options, signal: controller.signal})
    while (!existsSync(remoteDir) || !readdirSync(remoteDir).some((name) => name.startsWith('shard'))) await sleep(20)
    controller.abort()
    await expect(first).rejects.toMatchObject({name: 'AbortError'})
    const placed = readdirSync(remoteDir).filter((name) => name.startsWith('shard'))
    const recorded = Object.keys(JSON.parse(readFileSync(onHost(options.manifestPath), 'utf8')).files)
    expect(recorded.sort()).toEqual(placed.sort())
    expect(placed.length).toBeLessThan(40)

    const second = await syncAll(session, options)
    expect(second.files_sent).toBe(40 - placed.length)
    expect(files(remoteDir)).toEqual(files(options.localDir))
  })

  it('never writes through a directory the VM replaced with a link', async () => {
    const options = pair()
    project(options.localDir)
    await syncAll(session, options)
    await onVm(`mkdir -p /home/ubuntu/elsewhere && cd ${options.remoteDir} && rm -rf lib && ln -s /home/ubuntu/elsewhere lib`)
    write(options.localDir, 'lib/new.py', 'new\n')
    await expect(syncAll(session, options)).rejects.toThrow(/lib: is a symbolic link on the VM; not followed/)
    expect(tree(onHost('/home/ubuntu/elsewhere'))).toEqual({})
  })
})

function manifestText(files: Record<string, unknown>): string {
  return JSON.stringify({files, format: 'targon-sync-manifest', version: 1})
}
