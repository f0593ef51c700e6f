/** The flags of `targon up`: what it rents, how it bootstraps the VMs, the limits it sets, and what it tells. */
import {Flags} from '@oclif/core'

import {DEFAULT_DSTACK_VERSION} from '../adapters/settings/dstack-version.js'
import {DEFAULT_FLEET, DEFAULT_IMAGE} from '../adapters/settings/table.js'
import {ON_FAILURE, type OnFailure} from '../workflows/up/schema.js'
import {EVENT_FLAGS} from './base-command.js'
import {durationFlag, usdFlag} from './flags.js'

/** How long up waits for its VMs by default (--timeout). */
export const DEFAULT_TIMEOUT = '60m'

export const UP_FLAGS = {
  ...EVENT_FLAGS,
  notify: Flags.string({
    summary:
      'Webhook to report the outcome to (Slack-compatible JSON); prefer TARGON_NOTIFY_URL or config notify-url, as a command line shows in ps.',
  }),
  count: Flags.integer({default: 1, max: 64, min: 1, summary: 'How many VMs to create, in parallel.'}),
  'dry-run': Flags.boolean({
    default: false,
    summary:
      'Show what would be rented (the offer of each VM, prices against the cap, count, fleet, owner, limits); create, register and deploy nothing.',
  }),
  fleet: Flags.string({summary: `Fleet to put the VMs in (default: config, else "${DEFAULT_FLEET}").`}),
  gpu: Flags.string({summary: 'GPU model instead of a resource: the cheapest matching offer is used.'}),
  image: Flags.string({summary: `VM image (default: config, else ${DEFAULT_IMAGE}).`}),
  'max-cost': usdFlag('--max-cost', 'a budget in USD per VM', {
    description:
      'The API has no place for a budget, so it is kept in this config directory only, like --ttl: the guard (targon guard install) deletes the VM once its estimated cost (hourly price x age since creation; Targon reports no per-VM charges) reaches the budget (targon down --expired does so once). From any machine, targon down --over-cost USD does the same without local state.',
    summary: 'Budget per VM in USD, e.g. 20; kept locally and enforced by the guard, targon guard install (estimated cost = price x age).',
  }),
  'max-price': Flags.string({
    helpValue: '<USD>',
    summary: 'Price cap in USD/h for the whole VM (required, or set it with targon config set max-price).',
  }),
  min: Flags.integer({min: 1, summary: 'With --count: keep a partial fleet if at least this many VMs come up.'}),
  'min-gpus': Flags.integer({min: 1, summary: 'With --gpu: at least this many GPUs per VM.'}),
  name: Flags.string({
    summary:
      "Name for the VM (with --count 1); re-running with it adopts the existing VM (alone, without a resource or --gpu, it only adopts). With an owner set, only the owner's VM of that name is adopted.",
  }),
  bootstrap: Flags.boolean({
    allowNo: true,
    default: true,
    summary: 'Install Docker and the NVIDIA Container Toolkit over SSH and start the dstack shim (--no-bootstrap stops once the VM runs).',
  }),
  'dstack-version': Flags.string({
    summary: `dstack-shim version to run (default: config, else ${DEFAULT_DSTACK_VERSION}; "latest" takes the newest).`,
  }),
  'gpu-test': Flags.boolean({
    allowNo: true,
    default: true,
    summary:
      'Check that containers see the GPUs (--no-gpu-test skips it); if the test image cannot be pulled, a runtime-level check runs instead.',
  }),
  idle: durationFlag('--idle', {
    description:
      "The bootstrap installs an idle sampler on every VM (targon-fleet-idle, an unprivileged service) that keeps the VM's idle clock: activity is a GPU at or above 10 % utilisation, an SSH session or port-forward (not targon's own probes, nor the dstack server's tunnel to the shim), a dstack task that is not terminated, and optionally a running container (--idle-containers) or what --idle-check says. --idle stores the limit on the VM and locally; the guard's sweeps (targon guard install) delete VMs idle longer than it (targon down --idle does so once).",
    summary:
      'Idle limit, e.g. 30m (seconds allowed, e.g. 30s): the guard (targon guard install) deletes the VM once it has been idle this long.',
  }),
  'idle-check': Flags.string({
    summary:
      "A command run on the VM as ubuntu every sample; exit 0 means idle (e.g. an empty ComfyUI queue), anything else counts as activity; '' removes it. Kept when a later up adopts the VM without it.",
  }),
  'idle-containers': Flags.boolean({
    allowNo: true,
    summary:
      'Count a running container as activity for the idle clock (--no-idle-containers stops it); kept when a later up adopts the VM without it.',
  }),
  'on-delete': Flags.string({
    summary:
      "A command to run on the VM as ubuntu before targon down or sweep deletes it, e.g. to save a checkpoint (at most 4 KiB, one line); '' removes it. Kept when a later up adopts the VM without it.",
    description:
      "Stored on the VM in /etc/targon-fleet/on-delete.conf (0600 root: it may carry a token), never locally and never on a command line. down and sweep run it over the VM's pinned SSH connection with TARGON_VM_NAME, TARGON_VM_UID and TARGON_DELETE_REASON (ttl, idle, max-cost, over-cost, down, job-done) set, and report its exit code, duration and last output lines; a hook that fails or times out does not stop the deletion, and a VM that cannot be reached is deleted without it. The clean-up of a failed or interrupted up runs no hook. The VM bills while its hook runs: a --max-cost budget can be overshot by up to --hook-timeout of its price.",
  }),
  'hook-timeout': durationFlag('--hook-timeout', {
    summary:
      'How long the --on-delete hook may run before it is stopped and the VM deleted all the same, e.g. 5m (default 10m; a sweep waits 30m at most, as it holds its lock meanwhile). Kept in this config directory as well: the copy on the VM can only shorten it.',
  }),
  reinstall: Flags.boolean({default: false, summary: 'Ignore the bootstrap marker and check every step again.'}),
  'force-shim': Flags.boolean({
    default: false,
    summary: "Install targon's dstack shim on a host that dstack owns (refused while a dstack task runs on it).",
    description:
      "A host that a dstack server has taken over (its shim, shim.env, runner or keys say so, or a task runs on its shim) is reported dstack-managed, and targon leaves its shim, shim.env and unit as they are and never restarts the shim. --force-shim replaces them with targon's pinned shim and its shim.env (dropping the fleet's env: entries) and restarts the shim; it exits 2 and changes nothing while a dstack task runs on the host. dstack installs its own shim again at its next deploy of the host.",
  }),
  dstack: Flags.boolean({
    default: false,
    summary: "Once the VMs are ready, sync dstack's fleet targon-<fleet> (as targon dstack sync), so that dstack can run on them.",
    description:
      'Needs a dstack server configured (dstack-url, dstack-project, dstack-token). A sync that fails is a warning: the VMs stay, and targon dstack sync --fleet F (or the guard) adds them later.',
  }),
  shim: Flags.boolean({allowNo: true, default: true, summary: 'Start the dstack shim (--no-shim skips the shim-start phase).'}),
  'on-failure': Flags.option({default: 'auto' as OnFailure, options: ON_FAILURE})({
    summary: 'On failure or Ctrl-C: auto deletes what this run created; delete also deletes an adopted VM; keep deletes nothing.',
  }),
  timeout: durationFlag('--timeout', {
    summary: `Overall time limit with a unit s, m, h or d, from 1s to 365d (default ${DEFAULT_TIMEOUT}), e.g. 30m (wait-running alone is capped at 20m); with --wait, counted from when capacity is found.`,
  }),
  wait: durationFlag('--wait', {
    description:
      'Without --wait, no capacity under the cap exits 9 or 10 at once. With it, the public inventory is read (without the API key) at most every 15 s (TARGON_CAPACITY_POLL_INTERVAL), backing off, and nothing is created meanwhile; a workload whose deploy was refused for capacity is kept and deployed again when its offer lists capacity. With --count, VMs are created as capacity appears. When the wait runs out, the exit codes and the --min rule are as without it.',
    summary: 'Wait up to this long for capacity under the cap, with a unit s, m, h or d, from 1s to 365d, e.g. 2h.',
  }),
  ttl: durationFlag('--ttl', {
    description:
      'The API has no field for a lifetime, so the TTL is kept in this config directory only: the guard (targon guard install) enforces it from here (targon down --expired does so once), and finds nothing from another machine or a fresh directory: there, targon down --older-than reads the creation time the API reports.',
    summary: 'Lifetime with a unit, from 1m to 365d, e.g. 6h; kept locally and enforced by the guard (targon guard install).',
  }),
}
