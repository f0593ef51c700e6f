/**
 * `targon run` and `targon jobs` on simulated VMs that are real SSH hosts (needs root, like exec.test.ts); first, the
 * VMs' systemd-run and systemctl doubles, which play the transient units that jobs run as.
 */
import {describe, expect, it} from 'vitest'

import {type CliOptions, parseJson, runCli, tempDir, waitFor} from '../helpers/cli.js'
import {simulatorEnv, useSimulatedVms} from '../helpers/simulator.js'

const simulated = useSimulatedVms()
const configDir = tempDir('targon-config-')

function targon(args: string[], options: CliOptions = {}) {
  return runCli(args, {
    ...options,
    env: simulatorEnv(simulated.sim, {TARGON_CONFIG_DIR: configDir, ...options.env}),
    timeoutMs: options.timeoutMs ?? 120_000,
  })
}

/** One VM without the bootstrap (the doubles are there from boot): its name. */
async function rentBare(fleet: string): Promise<{name: string; uid: string}> {
  const up = await targon(['up', 'rtx6000b-small', '--max-price', '1.8', '--no-bootstrap', '--fleet', fleet, '--json'])
  expect(up.code, up.stdout + up.stderr).toBe(0)
  return parseJson(up).data.vms[0]
}

/** A command on the VM as ubuntu: its stdout, and its exit code. */
async function onVm(vm: string, command: string): Promise<{code: number; stdout: string}> {
  const result = await targon(['exec', '--vms', vm, '--json', '--', command])
  const doc = parseJson(result)
  return {code: doc.data.results[0].exit_code, stdout: (doc.data.results[0].tail as string[]).join('\n')}
}

describe('the systemd doubles of a simulated VM', () => {
  it('play transient units: --uid, WorkingDirectory, output to a file, is-active, show, stop', async () => {
    const vm = await rentBare('units')
    const show = 'systemctl show -p ActiveState,Result,ExecMainStatus,ExecMainStartTimestamp,User,WorkingDirectory'
    const start = await onVm(
      vm.name,
      "mkdir -p /home/ubuntu/w && sudo -n systemd-run --unit=demo --uid=ubuntu -p WorkingDirectory=/home/ubuntu/w -p StandardOutput=append:/home/ubuntu/w/log -p StandardError=append:/home/ubuntu/w/log --setenv=GREETING='hi there' /bin/bash -c 'id -un; pwd; echo \"$GREETING\"; echo oops >&2; touch made; sleep 30'",
    )
    expect(start).toMatchObject({code: 0, stdout: 'Running as unit: demo.service'})
    await waitFor(() => simulated.farm.vm(vm.uid).readFile('/home/ubuntu/w/log').includes('oops'))
    expect(simulated.farm.vm(vm.uid).readFile('/home/ubuntu/w/log')).toBe('ubuntu\n/home/ubuntu/w\nhi there\noops\n')
    expect(await onVm(vm.name, 'stat -c %U /home/ubuntu/w/made; systemctl is-active demo')).toEqual({code: 0, stdout: 'ubuntu\nactive'})
    const running = await onVm(vm.name, `${show} demo.service`)
    expect(running.stdout).toMatch(
      /^ActiveState=active\nResult=success\nExecMainStatus=0\nExecMainStartTimestamp=\w{3} \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\nUser=ubuntu\nWorkingDirectory=\/home\/ubuntu\/w$/,
    )
    // A second unit of that name is refused while it runs; a non-root caller cannot start one.
    expect((await onVm(vm.name, 'sudo -n systemd-run --unit=demo /bin/true')).code).toBe(1)
    expect((await onVm(vm.name, 'systemd-run --unit=other /bin/true')).code).toBe(1)

    // stop ends the whole unit (its children too); a stopped transient unit is gone.
    expect(await onVm(vm.name, 'sudo -n systemctl stop demo; pgrep -x sleep || echo none')).toEqual({code: 0, stdout: 'none'})
    expect(await onVm(vm.name, 'systemctl is-active demo')).toEqual({code: 3, stdout: 'inactive'})
    expect((await onVm(vm.name, `${show} demo`)).stdout).toContain(
      'ActiveState=inactive\nResult=success\nExecMainStatus=0\nExecMainStartTimestamp=\n',
    )
    expect((await onVm(vm.name, 'sudo -n systemctl stop demo')).code).toBe(5)

    // A failing unit stays loaded as failed until reset-failed, unless --collect; a successful one is collected.
    const failed = await onVm(
      vm.name,
      "sudo -n systemd-run --unit=bad --uid=ubuntu /bin/bash -c 'exit 7' >/dev/null; sleep 1; systemctl is-active bad; systemctl show -p ActiveState,Result,ExecMainStatus --value bad",
    )
    expect(failed.stdout).toBe('failed\nfailed\nexit-code\n7')
    expect((await onVm(vm.name, 'sudo -n systemctl reset-failed bad; systemctl show -p ActiveState bad')).stdout).toBe(
      'ActiveState=inactive',
    )
    const collected = await onVm(
      vm.name,
      "sudo -n systemd-run --collect --unit=gone /bin/bash -c 'exit 7' >/dev/null; sleep 1; systemctl show -p LoadState,ActiveState gone",
    )
    expect(collected.stdout).toBe('LoadState=not-found\nActiveState=inactive')
    // A missing working directory fails the unit as systemd does (200/CHDIR).
    const chdir = await onVm(
      vm.name,
      'sudo -n systemd-run --unit=nodir -p WorkingDirectory=/nonexistent /bin/true >/dev/null; sleep 1; systemctl show -p Result,ExecMainStatus --value nodir',
    )
    expect(chdir.stdout).toBe('exit-code\n200')
  })
})
