/**
 * The latency model of the simulated VMs: how long a real deploy and the slow parts of a real bootstrap take, in one
 * table. It is opt-in (VmScenario.latency): without it the VMs boot as fast as they can, the doubles answer at once
 * and the tests stay fast. With it everything waits by sleeping, rather than burning CPU, so that a 2-core machine
 * can time our own part honestly. The defaults are calibrated so that a serial install (three updates, two installs,
 * the shim after apt) takes about the minute reported live, and a deploy as observed: the address in the state after
 * 20 s while it still says provisioning, SSH answering after 30 s, `running` after 60 s.
 *
 * Applied by the simulator (the deploy rows, through VmFarm: the state's address and running), the farm (sshd
 * starts answering) and the doubles on the VM (test/vm/doubles/double.sh, shim-server.mjs: the rest).
 */
export const LATENCY_MODEL = {
  /** After deploy: the state carries the VM's address (it still says provisioning). */
  addressSeconds: 20,
  /** After deploy: the VM's sshd answers. */
  sshAnswersSeconds: 30,
  /** After deploy: the state says running. */
  runningSeconds: 60,
  /** `apt-get update`: this much ... */
  aptUpdateSeconds: 4,
  /** ... plus this much per third-party repository configured (files in /etc/apt/sources.list.d). */
  aptUpdatePerRepositorySeconds: 2,
  /** `apt-get install`: this much per transaction ... */
  aptInstallSeconds: 2,
  /** ... plus this much when it installs the Docker packages ... */
  aptInstallDockerSeconds: 25,
  /** ... plus this much when it installs the NVIDIA Container Toolkit. */
  aptInstallToolkitSeconds: 6,
  /** Downloading the dstack-shim binary. */
  shimDownloadSeconds: 3,
  /** Downloading an apt key or repository list. */
  keyOrListDownloadSeconds: 0.3,
  /** `docker pull ubuntu:24.04`. */
  imagePullSeconds: 6,
  /** `systemctl restart docker`. */
  dockerRestartSeconds: 2,
  /** From the shim's start to its first healthy answer. */
  shimHealthySeconds: 2,
} as const

export type LatencyModel = {[K in keyof typeof LATENCY_MODEL]: number}

/**
 * The floor of time to ready under the model (bench figure 11): the longest chain of rows that must happen one after
 * the other on `up`'s path, from the deploy accepted to a healthy shim on a VM whose state says running. The path
 * overlaps two things: the bootstrap starts as soon as SSH answers, while the state still says provisioning, and the
 * shim binary downloads while apt works. Everything else runs in order:
 *
 *   ssh     = max(address, sshAnswers)
 *   apt     = 3 keyOrListDownload + aptUpdate + 2 aptUpdatePerRepository + aptInstall + aptInstallDocker + aptInstallToolkit
 *   install = max(apt, shimDownload) + dockerRestart + imagePull
 *   floor   = max(running, ssh + install + shimHealthy)
 *
 * 3 downloads (Docker's key, NVIDIA's key and NVIDIA's list) and 2 repositories in the one update (Docker's and
 * NVIDIA's), on a fresh VM; dockerRestart is daemon.json's, imagePull the GPU test's. With the defaults:
 * max(60, 30 + 41.9 + 2 + 6 + 2) = 81.9 s. What the model does not time (SSH handshakes, the script's upload, sudo,
 * the state watch's interval, the CLI itself) is what a measured time adds to it.
 */
export function readyFloorSeconds(model: LatencyModel = LATENCY_MODEL): number {
  const ssh = Math.max(model.addressSeconds, model.sshAnswersSeconds)
  const apt =
    3 * model.keyOrListDownloadSeconds +
    model.aptUpdateSeconds +
    2 * model.aptUpdatePerRepositorySeconds +
    model.aptInstallSeconds +
    model.aptInstallDockerSeconds +
    model.aptInstallToolkitSeconds
  const install = Math.max(apt, model.shimDownloadSeconds) + model.dockerRestartSeconds + model.imagePullSeconds
  return Math.max(model.runningSeconds, ssh + install + model.shimHealthySeconds)
}

/** The rows that the simulator and the farm play; the doubles play the others. */
const DEPLOY_ROWS = ['addressSeconds', 'sshAnswersSeconds', 'runningSeconds'] as const

function modelOf(model: Partial<LatencyModel> | true): LatencyModel {
  return {...LATENCY_MODEL, ...(model === true ? {} : model)}
}

/** The deploy rows in ms, every duration multiplied by scale; undefined without the model. */
export function deployTiming(
  model: Partial<LatencyModel> | true | undefined,
  scale = 1,
): {addressMs: number; sshAnswersMs: number; runningMs: number} | undefined {
  if (model === undefined) return undefined
  const values = modelOf(model)
  const ms = (seconds: number) => Math.round(seconds * scale * 1000)
  return {addressMs: ms(values.addressSeconds), runningMs: ms(values.runningSeconds), sshAnswersMs: ms(values.sshAnswersSeconds)}
}

/** The doubles' entries as scenario.env lines (SIM_LATENCY_<NAME>=seconds), every duration multiplied by scale. */
export function latencyEnv(model: Partial<LatencyModel> | true | undefined, scale = 1): string[] {
  if (model === undefined) return []
  const values: Partial<LatencyModel> = modelOf(model)
  for (const row of DEPLOY_ROWS) delete values[row]
  return Object.entries(values).map(
    ([name, seconds]) =>
      `SIM_LATENCY_${name
        .replace(/Seconds$/, '')
        .replace(/[A-Z]/g, (letter) => `_${letter}`)
        .toUpperCase()}=${seconds * scale}`,
  )
}
