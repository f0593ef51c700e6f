/** Which organization a command acts on: --org / TARGON_ORG, then config, then discovery. */
import type {TargonClient} from './api/client.js'
import {TargonError} from './errors.js'
import {readConfigValue} from './settings.js'

const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/

export async function resolveOrg(client: TargonClient, fromFlagOrEnv: string | undefined): Promise<string> {
  const explicit = fromFlagOrEnv ?? (await readConfigValue('org'))
  if (explicit !== undefined) {
    if (!SLUG.test(explicit)) throw new TargonError('USAGE', `org "${explicit}" is not a valid slug`, {hint: 'use lowercase letters, digits and hyphens, e.g. --org acme'})
    return explicit
  }

  const orgs = await client.listOrgs()
  if (orgs.length === 1) return (orgs[0] as {slug: string}).slug
  if (orgs.length === 0) throw new TargonError('AUTH', 'this API key belongs to no organization', {hint: 'create an org on targon.com or use another key'})
  // Several orgs: renting in the wrong one bills the wrong account, so never guess.
  const slugs = orgs.map((org) => org.slug).join(', ')
  throw new TargonError('CONFIG', `this API key can use several orgs (${slugs}); choose one`, {
    details: {orgs: orgs.map((org) => org.slug)},
    hint: `pass --org <slug>, export TARGON_ORG=<slug>, or run: targon config set org <slug>`,
  })
}
