// What the bundle uses of undici: Agent, request and the error classes. undici's own index also
// loads fetch, WebSocket, caches, mocks and proxies, which is most of its start-up cost. The bundle
// build (scripts/build.mjs) resolves `undici` to this file. The source imports undici only through
// src/lib/adapters/targon/undici-subset.ts, which declares what this file exports.
'use strict'

const Agent = require('undici/lib/dispatcher/agent.js')
const Dispatcher = require('undici/lib/dispatcher/dispatcher.js')
const errors = require('undici/lib/core/errors.js')

Dispatcher.prototype.request = require('undici/lib/api/api-request.js')

/** undici's top-level request(url, options) for an explicit dispatcher, as its index defines it. */
function request(url, {dispatcher, ...options}) {
  const {origin, pathname, search} = new URL(url)
  return dispatcher.request({...options, origin, path: `${pathname}${search}`})
}

module.exports = {Agent, errors, request}
