/** The marker bootstrap.sh leaves on a VM (B10): what it installed, and that the install ran to its end. */
import * as z from 'zod'

import type {SshSession} from '../ssh/session.js'
import {CHECK_OUTPUT_BYTES} from './remote-call.js'

const MARKER = '/var/lib/targon-dstack/bootstrap.json'

export const MarkerSchema = z.object({
  script_version: z.string().nullish(),
  docker: z.object({version: z.string().nullish()}).nullish(),
  nvidia_ctk_version: z.string().nullish(),
  driver_version: z.string().nullish(),
  gpus: z.object({count: z.number().nullish(), name: z.string().nullish()}).nullish(),
  gpu_check: z.string().nullish(),
  shim: z.object({version: z.string().nullish()}).nullish(),
})
export type Marker = z.infer<typeof MarkerSchema>

/** The VM's bootstrap marker (empty when there is none). */
export async function readMarker(session: SshSession): Promise<Marker> {
  return parseMarker((await session.exec(`cat ${MARKER}`, {maxBytes: CHECK_OUTPUT_BYTES})).stdout)
}

/** Whether a marker says the install ran to its end (B10 writes it with the script's version). */
export function markerSaysBootstrapped(marker: Marker): boolean {
  return Boolean(marker.script_version)
}

/** The marker a VM printed; anything that is not one (the VM's bytes are untrusted) is an empty marker. */
export function parseMarker(text: string): Marker {
  try {
    return MarkerSchema.parse(JSON.parse(text))
  } catch {
    return {}
  }
}
