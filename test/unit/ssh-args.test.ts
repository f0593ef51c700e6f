/** The ssh command line and environment that targon ssh uses: forwarding specs as OpenSSH takes them, the remote command as one line, no secrets. */
import {describe, expect, it} from 'vitest'

import {type Forwarding, checkForwarding, sshArgv, sshEnvironment} from '../../src/lib/adapters/ssh/connect-info.js'
import {isLoopback} from '../../src/lib/adapters/settings/urls.js'

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

describe('the environment of the ssh child', () => {
  it('drops every TARGON_ variable and any variable that carries the API key, and keeps the rest', () => {
    const env = {
      HOME: '/home/u',
      KEY_COPY: 'Bearer tgn_live_0123456789',
      PATH: '/usr/bin',
      SSH_AUTH_SOCK: '/tmp/agent',
      TARGON_API_KEY: 'tgn_live_0123456789',
      TARGON_ORG: 'acme',
    }
    expect(sshEnvironment(env, 'tgn_live_0123456789')).toEqual({HOME: '/home/u', PATH: '/usr/bin', SSH_AUTH_SOCK: '/tmp/agent'})
    expect(sshEnvironment(env, undefined)).toEqual({
      HOME: '/home/u',
      KEY_COPY: 'Bearer tgn_live_0123456789',
      PATH: '/usr/bin',
      SSH_AUTH_SOCK: '/tmp/agent',
    })
  })
})

describe('plain-http API URLs', () => {
  it('counts only this machine as loopback', () => {
    for (const host of ['localhost', '127.0.0.1', '127.1.2.3', '[::1]']) expect(isLoopback(host), host).toBe(true)
    for (const host of ['127.0.0.1.example.com', 'localhost.example.com', '10.0.0.1', '[::2]', 'api.targon.com'])
      expect(isLoopback(host), host).toBe(false)
  })
})
