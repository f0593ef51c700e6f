/**
 * TARGON_BENCH_SERIAL_PATH=1 is for the benchmark harness only (bench/run.ts), not a setting for users. It restores
 * the former serial path of `up`, so that the bench can measure the current path against it in the same run: SSH
 * waits until the state says running (not for the first address), and the bootstrap script runs the former install:
 * three apt-get updates, two apt-get installs (Docker, then the NVIDIA Container Toolkit), and no shim download
 * overlapped with apt (shim-start downloads it).
 */
export function benchSerialPath(): boolean {
  return process.env.TARGON_BENCH_SERIAL_PATH === '1'
}
