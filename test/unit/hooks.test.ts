/**
 * What a pre-delete hook's run keeps and passes on: the tail of its output (bounded in lines and bytes, control
 * characters removed, escaped for chat on delivery), the --on-delete checks, and the environment it is given.
 */
import {execFileSync} from 'node:child_process'
import {describe, expect, it} from 'vitest'

import {
  DEFAULT_HOOK_TIMEOUT_MS,
  TAIL_BYTES,
  TAIL_LINES,
  hookCommandProblem,
  SWEEP_HOOK_TIMEOUT_CAP_S,
  hookEnvironment,
  hookTimeoutS,
  hooksInWords,
  outputTail,
  parseHookSetting,
} from '../../src/lib/domain/hooks/hook.js'
import {slackText} from '../../src/lib/adapters/notify/notify.js'

describe('outputTail', () => {
  it('keeps the last 20 lines, without trailing blank lines', () => {
    const output = `${Array.from({length: 50}, (_, index) => `line ${index + 1}`).join('\n')}\n\n\n`
    const tail = outputTail(output).split('\n')
    expect(tail).toHaveLength(TAIL_LINES)
    expect(tail[0]).toBe('line 31')
    expect(tail.at(-1)).toBe('line 50')
  })

  it('keeps at most 4 KiB of the end, never half a character', () => {
    const tail = outputTail(`start\n${'é'.repeat(10_000)}x`)
    expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(TAIL_BYTES)
    expect(Buffer.byteLength(tail)).toBeGreaterThan(TAIL_BYTES - 2)
    expect(tail.endsWith('éx')).toBe(true)
    expect(tail).not.toContain('\uFFFD')
    expect(tail).not.toContain('start')
  })

  it('removes control characters: escapes, carriage returns, bells; a tab is a space', () => {
    expect(outputTail('\u001b[31mred\u001b[0m\r\nprogress 10%\rprogress 100%\u0007\n\ttabbed\u009b2J')).toBe(
      '[31mred[0m\nprogress 10%progress 100%\n tabbed2J',
    )
  })

  it('is escaped for chat when it is delivered: a tail cannot ping a channel or forge a link', () => {
    const [line] = hooksInWords([
      {
        hook: {detail: null, duration_ms: 1200, exit_code: 0, output_tail: '<!channel> <https://evil|click> & done', status: 'ok'},
        name: 'tcli-default-a',
        uid: 'wrk-1',
      },
    ])
    expect(slackText(line as string)).toBe(
      'tcli-default-a: hook ran in 1.2 s (exit 0); its output ends:\n&lt;!channel&gt; &lt;https://evil|click&gt; &amp; done',
    )
  })
})

describe('hookTimeoutS', () => {
  const bounds = {capS: null, recordedS: null, runS: null, vmS: 600}

  it("keeps a hook's own timeout under a sweep's cap of 30 minutes, and caps a longer one", () => {
    expect(SWEEP_HOOK_TIMEOUT_CAP_S).toBe(1800)
    expect(hookTimeoutS({...bounds, capS: SWEEP_HOOK_TIMEOUT_CAP_S, recordedS: 600})).toBe(600)
    expect(hookTimeoutS({...bounds, capS: SWEEP_HOOK_TIMEOUT_CAP_S, recordedS: 86_400, vmS: 86_400})).toBe(1800)
  })

  it('is the bound kept locally: a VM that rewrote its timeout to a day cannot lengthen it', () => {
    expect(hookTimeoutS({...bounds, recordedS: 60, vmS: 86_400})).toBe(60)
    // This run's --hook-timeout is the user's say over the recorded one, in either direction.
    expect(hookTimeoutS({...bounds, recordedS: 60, runS: 2, vmS: 86_400})).toBe(2)
    expect(hookTimeoutS({...bounds, recordedS: 60, runS: 300, vmS: 86_400})).toBe(300)
    expect(hookTimeoutS({...bounds, capS: SWEEP_HOOK_TIMEOUT_CAP_S, recordedS: 60, vmS: 86_400})).toBe(60)
  })

  it("lets the VM's stored timeout only shorten it", () => {
    expect(hookTimeoutS({...bounds, recordedS: 60, vmS: 5})).toBe(5)
    expect(hookTimeoutS({...bounds, recordedS: 60, runS: 300, vmS: 5})).toBe(5)
  })

  it('without a recorded bound (an older record, an adopted hook), is bounded by the default of 10 minutes', () => {
    expect(DEFAULT_HOOK_TIMEOUT_MS).toBe(600_000)
    expect(hookTimeoutS({...bounds, vmS: 86_400})).toBe(600)
    expect(hookTimeoutS({...bounds, vmS: 30})).toBe(30)
    expect(hookTimeoutS({...bounds, runS: 2, vmS: 86_400})).toBe(2)
  })
})

describe('hookCommandProblem', () => {
  it('takes one line of at most 4 KiB, and the empty command that removes the hook', () => {
    expect(hookCommandProblem('rsync -a ~/ckpt backup:/ckpt && echo "saved $TARGON_VM_NAME"')).toBeNull()
    expect(hookCommandProblem('')).toBeNull()
    expect(hookCommandProblem('x'.repeat(4096))).toBeNull()
    expect(hookCommandProblem('x'.repeat(4097))).toContain('longer than 4 KiB')
    expect(hookCommandProblem('é'.repeat(2049))).toContain('longer than 4 KiB')
    for (const bad of ['a\nb', 'a\tb', 'a\rb', 'a\u0000b', 'a\u001bb', 'a\u007fb', 'a\u0085b'])
      expect(hookCommandProblem(bad)).toContain('control character')
  })
})

describe('hookEnvironment', () => {
  const shell = (assignments: string) =>
    execFileSync('bash', ['-c', `${assignments} bash -c 'printf "%s|%s|%s" "$TARGON_VM_NAME" "$TARGON_VM_UID" "$TARGON_DELETE_REASON"'`], {
      encoding: 'utf8',
    })

  it('passes a checked name and uid through a real shell unchanged', () => {
    expect(shell(hookEnvironment({name: 'tcli-train-w1', uid: 'wrk-abc_1'}, 'ttl'))).toBe('tcli-train-w1|wrk-abc_1|ttl')
  })

  it('gives an empty value for a name or uid that fails the checks, whatever it holds', () => {
    expect(shell(hookEnvironment({name: "x'; touch /tmp/owned; '", uid: '$(reboot)'}, 'down'))).toBe('||down')
    expect(shell(hookEnvironment({name: null, uid: 'wrk-1'}, 'idle'))).toBe('|wrk-1|idle')
  })
})

describe('parseHookSetting', () => {
  it('reads back a setting that up --on-delete stores', () => {
    expect(parseHookSetting(JSON.stringify({command: 'rsync -a out/ backup:', timeout_s: 600}))).toEqual({
      command: 'rsync -a out/ backup:',
      timeout_s: 600,
    })
    expect(parseHookSetting(JSON.stringify({command: 'true', timeout_s: 86_400}))?.timeout_s).toBe(86_400)
  })

  it('refuses a hostile stored setting: a huge or fractional timeout, invalid JSON, control characters', () => {
    expect(parseHookSetting(JSON.stringify({command: 'true', timeout_s: 86_401}))).toBeNull()
    expect(parseHookSetting(JSON.stringify({command: 'true', timeout_s: 1e12}))).toBeNull()
    expect(parseHookSetting(JSON.stringify({command: 'true', timeout_s: 1.5}))).toBeNull()
    expect(parseHookSetting(JSON.stringify({command: 'true', timeout_s: 0}))).toBeNull()
    expect(parseHookSetting(JSON.stringify({command: 'true', timeout_s: '600'}))).toBeNull()
    expect(parseHookSetting('{"command": "true", "timeout_s": ')).toBeNull()
    expect(parseHookSetting(JSON.stringify({command: 'true\nrm -rf ~', timeout_s: 60}))).toBeNull()
    expect(parseHookSetting(JSON.stringify({command: 'echo \u001b[2J', timeout_s: 60}))).toBeNull()
  })
})
