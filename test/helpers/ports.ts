/**
 * A local port for a test's own listener (an SSH forward): below the kernel's range of ephemeral ports (32768 and up
 * here), which outgoing connections take as their source ports, so that none of the many connections of a run can
 * hold it; and free of listeners when chosen.
 */
import {createServer} from 'node:net'

export async function unusedPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer()
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
    })
    if (free) return port
  }
}
