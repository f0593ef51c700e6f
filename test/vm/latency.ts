/**
 * The latency model of the simulated VMs: how long the slow parts of a real bootstrap take, in one table. It is
 * opt-in (VmScenario.latency): without it the doubles answer at once and the tests stay fast. With it they sleep,
 * rather than burn CPU, so that a 2-core machine can time our own part honestly. The defaults are calibrated so that
 * the former serial install (three updates, two installs, the shim after apt) takes about the minute reported live.
 *
 * Applied by the doubles on the VM (test/vm/doubles/double.sh, shim-server.mjs). The deploy-side timings of the
 * issue (address in the state after 20 s, SSH answering after 30 s, `running` after 60 s) are not modelled here.
 */
export const LATENCY_MODEL = {
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

/** The model's entries as scenario.env lines (SIM_LATENCY_<NAME>=seconds), every duration multiplied by scale. */
export function latencyEnv(model: Partial<LatencyModel> | true | undefined, scale = 1): string[] {
  if (model === undefined) return []
  const values: LatencyModel = {...LATENCY_MODEL, ...(model === true ? {} : model)}
  return Object.entries(values).map(
    ([name, seconds]) =>
      `SIM_LATENCY_${name
        .replace(/Seconds$/, '')
        .replace(/[A-Z]/g, (letter) => `_${letter}`)
        .toUpperCase()}=${seconds * scale}`,
  )
}
