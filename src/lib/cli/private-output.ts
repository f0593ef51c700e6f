import {fchmodSync, fstatSync} from 'node:fs'

/**
 * Output redirected into a file (targon ssh --config > ~/.ssh/targon.conf) is made 0600, as ssh wants its config
 * files; a terminal or a pipe is left alone.
 */
export function privateIfFile(fd: number): void {
  try {
    if (fstatSync(fd).isFile()) fchmodSync(fd, 0o600)
  } catch {
    // Not ours to change (another owner, a read-only mount): the output is the same.
  }
}
