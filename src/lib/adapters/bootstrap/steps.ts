/** The steps of bootstrap.sh, and the TARGON_STEP lines by which the script reports them from the VM. */
import {LineSplitter} from '../../core/lines.js'
import type {BootstrapStep} from '../events/schema.js'

export interface Substep {
  /** The script's own id (TARGON_STEP lines, last-run.json): internal to the bootstrap. */
  id: string
  /** What events and up --json call it (BOOTSTRAP_STEPS, events/schema.ts). */
  name: BootstrapStep
  title: string
}

export const INSTALL_STEPS: Substep[] = [
  {id: 'B0', name: 'marker-check', title: 'marker check'},
  {id: 'B1', name: 'preflight', title: 'preflight (OS, arch, NVIDIA driver)'},
  {id: 'B2', name: 'quiet-sudo', title: 'sudo says nothing (the hostname resolves)'},
  {id: 'B3', name: 'sshd-forwarding', title: 'sshd TCP forwarding'},
  {id: 'B4', name: 'apt-install', title: 'apt: repositories, one update, one install'},
  {id: 'B5', name: 'docker-service', title: 'Docker service'},
  {id: 'B6', name: 'nvidia-toolkit', title: 'NVIDIA Container Toolkit'},
  {id: 'B7', name: 'docker-daemon-config', title: 'daemon.json (nvidia runtime, cgroupfs)'},
  {id: 'B8', name: 'gpu-test', title: 'GPU smoke test'},
  {id: 'B9', name: 'firewall', title: 'firewall (left untouched)'},
  {id: 'B12', name: 'shim-access', title: 'shim API for root and ubuntu only'},
  {id: 'B11', name: 'idle-sampler', title: 'idle sampler'},
  {id: 'B10', name: 'write-marker', title: 'marker'},
]

export const SHIM_STEPS: Substep[] = [
  {id: 'S0', name: 'dstack-takeover', title: 'dstack takeover check'},
  {id: 'S1', name: 'shim-binary', title: 'dstack-shim binary'},
  {id: 'S3', name: 'shim-home', title: 'shim home'},
  {id: 'S4', name: 'shim-env', title: 'shim.env'},
  {id: 'S5', name: 'shim-unit', title: 'systemd unit'},
  {id: 'S6', name: 'shim-service', title: 'shim service'},
  {id: 'S9', name: 'shim-marker', title: 'marker'},
  {id: 'S7', name: 'shim-health', title: 'health check'},
]

/** A step of the script by its id; undefined for what is none (a VM's output is untrusted). */
export function substepOf(id: string): Substep | undefined {
  return [...INSTALL_STEPS, ...SHIM_STEPS].find((substep) => substep.id === id)
}

export interface StepEvent {
  id: string
  event: 'fail' | 'ok' | 'skip' | 'start'
  detail: string
  /** When it happened, in ms on the VM's clock (durations are differences of these). */
  at: number
}

/** Splits streamed text into TARGON_STEP events; other lines are log text. */
export class StepParser {
  private readonly lines: LineSplitter
  constructor(onEvent: (event: StepEvent) => void) {
    this.lines = new LineSplitter((line) => {
      const match = /^TARGON_STEP (\S+) \S+ (start|ok|skip|fail) @(\d+)(?: (.*))?$/.exec(line.trim())
      if (match) onEvent({at: Number(match[3]), detail: match[4] ?? '', event: match[2] as StepEvent['event'], id: match[1] as string})
    })
  }

  push(text: string): void {
    this.lines.push(text)
  }
}

/** Routes a command's output to one parser until a separator line, and to another after it. */
export class SplitOutput {
  before = ''
  after = ''
  split = false

  constructor(
    private readonly separator: string,
    private readonly first: StepParser,
    private readonly second: StepParser,
  ) {}

  push(text: string): void {
    if (this.split) {
      this.after += text
      this.second.push(text)
      return
    }

    const at = `\n${this.before}${text}`.indexOf(`\n${this.separator}\n`)
    if (at === -1) {
      this.before += text
      this.first.push(text)
      return
    }

    const combined = this.before + text
    const head = combined.slice(0, at)
    const tail = combined.slice(at + this.separator.length + 1)
    this.first.push(head.slice(this.before.length))
    this.before = head
    this.split = true
    this.after = tail
    this.second.push(tail)
  }
}
