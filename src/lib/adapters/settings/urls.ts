/** The URLs a setting may hold: the API's origin, and secret webhook or ping URLs. */
import {usageError} from '../../core/errors.js'

/** TARGON_API_URL: an http(s) origin; a trailing /tha/v3 (copied from an API path) is dropped, since the client appends it. */
export function apiOrigin(raw: string, source: string): string {
  const origin = serverOrigin(raw, source, {example: 'an origin such as https://api.targon.com', secret: 'the API key'})
  return origin.replace(/\/tha\/v3$/i, '')
}

/** TARGON_DSTACK_URL: the dstack server's origin (the path of a server behind a prefix kept); plain http only to this machine. */
export function dstackOrigin(raw: string, source: string): string {
  return serverOrigin(raw, source, {example: 'the dstack server, e.g. https://dstack.example.com', secret: 'the dstack token'})
}

/** A server's http(s) URL without a trailing slash. Its secret travels in every request: in clear text only to this machine. */
function serverOrigin(raw: string, source: string, {example, secret}: {example: string; secret: string}): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw usageError(`${source} "${raw}" is not a URL`, `set it to ${example}`)
  }

  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw usageError(`${source} "${raw}" must use http or https`, `set it to ${example}`)
  if (url.protocol === 'http:' && !isLoopback(url.hostname))
    throw usageError(`${source} "${raw}" uses plain http to another host, which would send ${secret} in clear text`, 'use https')
  return url.origin + url.pathname.replace(/\/+$/, '')
}

/**
 * A notify or heartbeat URL: https, or plain http to this machine; the value is never quoted, as it carries a token.
 * `example` says in the hint what to give.
 */
export function secretUrl(example: string): (raw: string, source: string) => string {
  return (raw, source) => {
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      throw usageError(`${source} is not a URL`, `give ${example}`)
    }

    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname)))
      throw usageError(`${source} must use https (plain http only to this machine)`, `give ${example}`)
    return url.href
  }
}

/** localhost, 127.0.0.0/8 or ::1 (a URL's hostname keeps the brackets of an IPv6 address). */
export function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname)
}
