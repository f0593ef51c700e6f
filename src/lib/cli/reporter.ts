/**
 * What a run tells others, owned by the run: its event stream and where the events go (--events ndjson on stderr,
 * --events-file), the run's first and last events, and its notifications (--notify, TARGON_NOTIFY_URL, notify-url).
 * Nothing here can stop or change the work: a failed sink or delivery becomes a warning.
 */
import type {Clock} from '../core/clock.js'
import {type TargonError, isTargonError, usageError} from '../core/errors.js'
import {printable} from '../core/output.js'
import {fileLines, stderrLines} from '../adapters/events/ndjson.js'
import {RunEvents, eventError} from '../adapters/events/run-events.js'
import {type NotifyEvent, deliver} from '../adapters/notify/notify.js'
import type {SettingsResolver} from '../adapters/settings/resolve.js'
import {registerExitCallback} from './exit-hooks.js'

/** The facts of one notification that the command knows. */
export interface NotifyFacts {
  exitCode: number
  owner?: string | null
  vms: {name: string | null; uid: string}[]
  stillBilling?: string[]
}

export class RunReporter {
  readonly events: RunEvents
  private eventLines: 'none' | 'stderr' = 'none'
  private closeEventsFile: (() => void) | undefined
  private disposeExitEvent: (() => void) | undefined
  private notifyUrl: string | undefined
  private readonly startedAt: number

  constructor(
    private readonly command: string,
    private readonly clock: Clock,
    private readonly warn: (message: string) => void,
  ) {
    this.events = new RunEvents(command, clock)
    this.startedAt = clock.now()
  }

  /** Sets up --events and --events-file, and announces the run. */
  follow(flags: {events?: 'ndjson'; 'events-file'?: string}, verbose: boolean): void {
    if (flags.events === 'ndjson') {
      if (verbose)
        throw usageError(
          '--verbose writes diagnostics to stderr, where --events ndjson writes only events',
          'use --events-file PATH with --verbose',
        )
      this.eventLines = 'stderr'
      this.events.on(stderrLines())
    }

    const path = flags['events-file']
    if (path !== undefined) {
      const file = fileLines(path, this.warn)
      this.closeEventsFile = file.close
      this.events.on(file.listener)
    }

    this.events.emit({status: 'started', type: 'run'})
    // A second signal exits at once, past `finally`: the stream still ends with how the run ended.
    this.disposeExitEvent = registerExitCallback(() => {
      this.events.emit({
        duration_ms: this.clock.now() - this.startedAt,
        error: {code: 'INTERRUPTED', hint: 'run targon status to see what is left', message: 'exited at once on a second signal'},
        status: 'failed',
        type: 'run',
      })
      this.closeEventsFile?.()
    })
  }

  /** Whether stderr carries only event lines (--events ndjson): no progress, no prompt, warnings as events. */
  eventsOnStderr(): boolean {
    return this.eventLines === 'stderr'
  }

  /** The run's last event: how it ended; then the sinks are closed. */
  finish(failure: TargonError | undefined): void {
    this.events.emit({
      detail: failure ? `exit code ${failure.exitCode}` : 'exit code 0',
      duration_ms: this.clock.now() - this.startedAt,
      error: failure ? eventError(failure) : null,
      status: failure ? 'failed' : 'done',
      type: 'run',
    })
    this.disposeExitEvent?.()
    this.closeEventsFile?.()
  }

  /**
   * The run's notify URL (--notify, TARGON_NOTIFY_URL, the profile's notify-url), read before the work starts. The
   * flag is accepted with a warning: a command line shows in ps and in crontabs, and the URL is a secret.
   *
   * A URL the notify-url rule refuses (malformed, or plain http to another machine) is a warning and the run goes on
   * without notifications: nothing optional may stop a deletion, and a cron line with a typo in its environment must
   * still clean up. Only a --notify on the command line of a run that has created nothing yet (`refuseFlag`: up,
   * credits) is refused, as the person who typed it is there to fix it.
   */
  async useNotifyUrl(settings: SettingsResolver, flag: string | undefined, refuseFlag: boolean): Promise<void> {
    if (flag !== undefined)
      this.warn('--notify puts the webhook URL where ps and crontabs show it: prefer TARGON_NOTIFY_URL or targon config set notify-url')
    try {
      this.notifyUrl = await settings.get('notify-url', flag)
    } catch (error) {
      if (!isTargonError(error) || (refuseFlag && flag !== undefined)) throw error
      // The refusal never quotes the URL (it may carry a token).
      this.warn(`${error.message}: this run sends no notification${error.hint ? ` (${error.hint})` : ''}`)
    }
  }

  /** Whether this run sends notifications (a notify URL is set and was accepted): work only they need can be skipped. */
  notifying(): boolean {
    return this.notifyUrl !== undefined
  }

  /** Sends one notification of this run when a notify URL is set; a failed delivery becomes a warning, nothing more. */
  async notify(event: NotifyEvent, text: string, facts: NotifyFacts, acting: {org: string | null; profile: string | null}): Promise<void> {
    if (!this.notifyUrl) return
    const warning = await deliver(
      this.notifyUrl,
      {
        targon: {
          command: this.command,
          event,
          exit_code: facts.exitCode,
          org: acting.org,
          owner: facts.owner ?? null,
          profile: acting.profile,
          still_billing: facts.stillBilling ?? [],
          vms: facts.vms,
        },
        text: printable(text),
      },
      this.clock,
    )
    if (warning) this.warn(warning)
  }
}
