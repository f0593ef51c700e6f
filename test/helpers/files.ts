/** Local trees as the end-to-end tests compare them. */
import {createHash} from 'node:crypto'
import {readFileSync, readdirSync, statSync} from 'node:fs'
import {join, relative} from 'node:path'

/** Every file and directory under `dir`: relative path to "dir", or the file's SHA-256 and permission bits. */
export function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (path: string) => {
    for (const name of readdirSync(path)) {
      const full = join(path, name)
      const info = statSync(full)
      const key = relative(dir, full)
      if (info.isDirectory()) {
        out[key] = 'dir'
        walk(full)
      } else out[key] = `${createHash('sha256').update(readFileSync(full)).digest('hex')} ${(info.mode & 0o777).toString(8)}`
    }
  }

  walk(dir)
  return out
}
