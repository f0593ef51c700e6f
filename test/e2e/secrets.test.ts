/**
 * Secret hygiene: with a recognizable API key, every command's stdout, stderr, JSON output,
 * --verbose traces and the files it leaves (except the 0600 secret files themselves) are
 * scanned for the key and the VMs' passwords. Values that reach the VM are validated.
 */
import {readFileSync, readdirSync, statSync} from 'node:fs'
import {join, relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {parseJson, runCli, tempDir} from '../helpers/cli.js'
import {startSimulator} from '../helpers/simulator.js'
import type {TargonSimulator} from '../simulator/simulator.js'
import {VmFarm} from '../vm/farm.js'

const CANARY_KEY = 'tgn_CANARY_secret_9f8e7d6c5b4a'
let sim: TargonSimulator
let farm: VmFarm

beforeAll(async () => {
  sim = await startSimulator({bootDelayMs: 200, tokens: {[CANARY_KEY]: ['acme']}})
  farm = new VmFarm(sim)
})

afterAll(async () => {
  await farm.stopAll()
  await sim.stop()
})

function filesUnder(dir: string): string[] {
  return readdirSync(dir, {recursive: true, withFileTypes: true})
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
}

describe('secret hygiene', () => {
  it('never prints or leaves the API key or a VM password outside the 0600 secret files', async () => {
    const configDir = tempDir('targon-config-')
    const env = {TARGON_API_KEY: CANARY_KEY, TARGON_API_URL: sim.url, TARGON_CONFIG_DIR: configDir}
    const outputs: string[] = []
    const targon = async (args: string[], expected = 0) => {
      const result = await runCli(args, {env})
      expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(expected)
      outputs.push(result.stdout, result.stderr)
      return result
    }

    await targon(['offers', '--verbose'])
    const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--name', 'canary', '--verbose'])
    expect(up.stderr).toContain('[http] POST /tha/v3/orgs/acme/workloads -> 201')
    await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--name', 'canary', '--json', '--verbose'])
    await targon(['status', '--json', '--verbose'])
    await targon(['status', '--dstack-fleet'])
    await targon(['ssh', 'tcli-default-canary', '--print'])
    await targon(['ssh', 'tcli-default-canary', '--', 'id'])
    await targon(['config', 'list', '--json'])
    await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--verbose', '--json', '--dstack-version', 'bad version'], 2)
    await runCli(['status', '--verbose'], {env: {...env, TARGON_API_KEY: `${CANARY_KEY}x`}}).then((result) =>
      outputs.push(result.stdout, result.stderr),
    )

    const passwords = [...sim.workloads.values()].map((workload) => workload.password)
    expect(passwords.length).toBeGreaterThan(0)

    // Secret files are 0600 in a 0700 directory; everything else is scanned.
    const files = filesUnder(configDir)
    const secretFiles = files.filter((file) => /^(vms\/|keys\/id_ed25519$|config\.json$)/.test(relative(configDir, file)))
    for (const file of secretFiles) expect(statSync(file).mode & 0o077, file).toBe(0)
    expect(statSync(configDir).mode & 0o777).toBe(0o700)
    const scanned = [...outputs, ...files.filter((file) => !secretFiles.includes(file)).map((file) => readFileSync(file, 'utf8'))]
    for (const secret of [CANARY_KEY, ...passwords]) {
      expect(scanned.filter((text) => text.includes(secret))).toEqual([])
    }

    expect(scanned.join('\n')).not.toMatch(/authorization|bearer/i)
    expect((await runCli(['down', '--all'], {env})).code).toBe(0)
  })

  it('validates values that reach the VM or the API: injection attempts are usage errors', async () => {
    const env = {TARGON_API_KEY: CANARY_KEY, TARGON_API_URL: sim.url, TARGON_CONFIG_DIR: tempDir('targon-config-')}
    for (const args of [
      ['--dstack-version', '0.21.2; touch /tmp/pwned'],
      ['--dstack-version', '$(reboot)'],
      ['--name', 'x;rm -rf /'],
      ['--name', '`id`'],
      ['--fleet', 'a b'],
      ['--org', 'acme/../other'],
    ]) {
      const result = await runCli(['up', 'rtx6000b-small', '--max-price', '1.8', '--json', ...args], {env})
      expect(result.code, args.join(' ')).toBe(2)
      expect(parseJson(result).error.code).toBe('USAGE')
    }

    const image = await runCli(['up', 'rtx6000b-small', '--max-price', '1.8', '--json', '--image', "ubuntu'; reboot; '"], {env})
    expect(image.code).toBe(2)
    expect(parseJson(image).error.hint).toContain('ubuntu-24-04-lts-595')
    expect(sim.live()).toEqual([])
  })

  it('has no StrictHostKeyChecking=no anywhere in the code', () => {
    const src = fileURLToPath(new URL('../../src', import.meta.url))
    const offenders = filesUnder(src).filter((file) => /StrictHostKeyChecking\s*=?\s*no/i.test(readFileSync(file, 'utf8')))
    expect(offenders).toEqual([])
  })
})
