/**
 * --events ndjson and --events-file: each event as one JSON line, on stderr or in a file. Lines are written
 * synchronously, so that they keep their order and reach the file even when the run is then killed.
 */
import {closeSync, openSync, rmSync, writeSync} from 'node:fs'

import type {RunEvent} from './schema.js'
import {TargonError} from '../../core/errors.js'
import type {EventListener} from './run-events.js'

/** Lines on stderr. */
export function stderrLines(): EventListener {
  return (event) => process.stderr.write(`${JSON.stringify(event)}\n`)
}

/**
 * Lines in a file, created 0600 (events name VMs, addresses and errors) and replaced if it exists: whatever was
 * there (a symlink included) is removed first, and the new file is created exclusively. A write that fails (a full
 * disk) stops the file, not the run: `onFailure` is told once.
 */
export function fileLines(path: string, onFailure: (message: string) => void): {listener: EventListener; close: () => void} {
  let fd: number | undefined
  try {
    rmSync(path, {force: true})
    fd = openSync(path, 'wx', 0o600)
  } catch (error) {
    throw new TargonError('USAGE', `cannot write the events file ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`, {
      hint: 'give --events-file a path in a directory you can write',
    })
  }

  const listener = (event: RunEvent) => {
    if (fd === undefined) return
    try {
      writeSync(fd, `${JSON.stringify(event)}\n`)
    } catch (error) {
      close()
      onFailure(`events are no longer written to ${path}: ${(error as NodeJS.ErrnoException).code ?? 'write failed'}`)
    }
  }

  const close = () => {
    const open = fd
    fd = undefined
    try {
      if (open !== undefined) closeSync(open)
    } catch {
      // Closing a file that could not be written: nothing more to lose.
    }
  }

  return {close, listener}
}
