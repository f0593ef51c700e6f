/**
 * Secret hygiene: with a recognizable API key, every command's stdout, stderr, JSON output,
 * --verbose traces and the files it leaves (except the 0600 secret files themselves) are
 * scanned for the key and the VMs' passwords. Values that reach the VM are validated.
 */
import {readFileSync, readdirSync, statSync} from 'node:fs'
import {join, relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import {describe, expect, it} from 'vitest'

import {parseJson, tempDir} from '../helpers/cli.js'
import {useVmFixture} from '../helpers/fixture.js'

const CANARY_KEY = 'tgn_CANARY_secret_9f8e7d6c5b4a'
const simulated = useVmFixture({
  inProcess: true,
  env: {TARGON_API_KEY: CANARY_KEY},
  simulator: {answerDeployOnceBooted: true, bootDelayMs: 200, tokens: {[CANARY_KEY]: ['acme']}},
})
const {configDir, targon} = simulated

function filesUnder(dir: string): string[] {
  return readdirSync(dir, {recursive: true, withFileTypes: true})
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
}

describe('secret hygiene', () => {
  it('never prints or leaves the API key or a VM password outside the 0600 secret files', async () => {
    const outputs: string[] = []
    // Each run's exit code is checked, and its output kept for the scan.
    const recorded = async (args: string[], expected = 0) => {
      const result = await targon(args)
      expect(result.code, `${args.join(' ')}\n${result.stderr}`).toBe(expected)
      outputs.push(result.stdout, result.stderr)
      return result
    }

    await recorded(['offers', '--verbose'])
    const up = await recorded(['up', 'rtx6000b-small', '--max-price', '1.8', '--name', 'canary', '--verbose'])
    expect(up.stderr).toContain('[http] POST /tha/v3/orgs/acme/workloads -> 201')
    await recorded(['up', 'rtx6000b-small', '--max-price', '1.8', '--name', 'canary', '--json', '--verbose'])
    await recorded(['status', '--json', '--verbose'])
    await recorded(['status', '--dstack-fleet'])
    await recorded(['ssh', 'tcli-default-canary', '--print'])
    await recorded(['ssh', 'tcli-default-canary', '--', 'id'])
    await recorded(['config', 'list', '--json'])
    await recorded(['up', 'rtx6000b-small', '--max-price', '1.8', '--verbose', '--json', '--dstack-version', 'bad version'], 2)
    await targon(['status', '--verbose'], {env: {TARGON_API_KEY: `${CANARY_KEY}x`}}).then((result) =>
      outputs.push(result.stdout, result.stderr),
    )

    const passwords = [...simulated.sim.workloads.values()].map((workload) => workload.password)
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
    expect((await targon(['down', '--all'])).code).toBe(0)
  })

  it('validates values that reach the VM or the API: injection attempts are usage errors', async () => {
    const config = tempDir('targon-config-')
    for (const args of [
      ['--dstack-version', '0.21.2; touch /tmp/pwned'],
      ['--dstack-version', '$(reboot)'],
      ['--name', 'x;rm -rf /'],
      ['--name', '`id`'],
      ['--fleet', 'a b'],
      ['--org', 'acme/../other'],
    ]) {
      const result = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--json', ...args], {config})
      expect(result.code, args.join(' ')).toBe(2)
      expect(parseJson(result).error.code).toBe('USAGE')
    }

    const image = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--json', '--image', "ubuntu'; reboot; '"], {config})
    expect(image.code).toBe(2)
    expect(parseJson(image).error.hint).toContain('ubuntu-24-04-lts-595')
    expect(simulated.sim.live()).toEqual([])
  })

  it('has no StrictHostKeyChecking=no anywhere in the code', () => {
    const src = fileURLToPath(new URL('../../src', import.meta.url))
    const offenders = filesUnder(src).filter((file) => /StrictHostKeyChecking\s*=?\s*no/i.test(readFileSync(file, 'utf8')))
    expect(offenders).toEqual([])
  })
})
