/** The ssh command line that targon ssh runs: forwarding specs as OpenSSH takes them, and the remote command as one line. */
import {describe, expect, it} from 'vitest'

import {type Forwarding, checkForwarding, sshArgv} from '../../src/lib/ssh/connect-info.js'

const accepts = (kind: 'dynamic' | 'local' | 'remote', spec: string) => {
  const forwarding: Forwarding = {dynamic: [], local: [], noCommand: false, remote: []}
  forwarding[kind] = [spec]
  try {
    checkForwarding(forwarding)
    return true
  } catch {
    return false
  }
}

describe('forwarding specs', () => {
  it('takes the forms OpenSSH takes', () => {
    for (const spec of ['8888:localhost:8888', '127.0.0.1:8888:localhost:8888', '[::1]:8888:localhost:8888', '/tmp/s:localhost:80']) {
      expect(accepts('local', spec), spec).toBe(true)
      expect(accepts('remote', spec), spec).toBe(true)
    }

    expect(accepts('remote', '8888')).toBe(true)
    expect(accepts('dynamic', '1080')).toBe(true)
    expect(accepts('dynamic', 'localhost:1080')).toBe(true)
  })

  it('refuses a bad spec or one that could pass for an option', () => {
    expect(accepts('local', '8888')).toBe(false)
    expect(accepts('local', '8888:localhost')).toBe(false)
    expect(accepts('local', '8888:localhost:99999')).toBe(false)
    expect(accepts('dynamic', '8888:localhost:8888')).toBe(false)
    expect(accepts('local', '-oProxyCommand=x')).toBe(false)
    expect(() => checkForwarding({dynamic: [], local: ['8888'], noCommand: false, remote: []})).toThrow(
      '-L "8888" is not a forwarding spec',
    )
  })
})

describe('the remote command', () => {
  const target = {configDir: '/c', host: '192.0.2.1', identityFile: '/c/keys/id_ed25519', name: 'vm', port: 2222, uid: 'wrk-1'}

  it('joins the words after -- with spaces into one line, as OpenSSH and targon exec do', () => {
    expect(sshArgv(target, ['df -h / | tail -1']).slice(-2)).toEqual(['--', 'df -h / | tail -1'])
    expect(sshArgv(target, ['sh', '-c', 'cd /tmp && pwd']).slice(-2)).toEqual(['--', 'sh -c cd /tmp && pwd'])
    expect(sshArgv(target, [])).not.toContain('--')
  })
})
