/** Which organization a command acts on: --org, then TARGON_ORG, then config, then discovery. */
import {TargonError} from '../shell/errors.js'
import type {TargonClient} from '../targon/client.js'
import {resolveSetting} from './settings.js'

export async function resolveOrg(client: TargonClient, fromFlag: string | undefined): Promise<string> {
  const explicit = await resolveSetting('org', fromFlag)
  if (explicit !== undefined) {
    await assertVisible(client, explicit)
    return explicit
  }

  const orgs = await client.listOrgs()
  if (orgs.length === 1) return (orgs[0] as {slug: string}).slug
  if (orgs.length === 0)
    throw new TargonError('AUTH', 'this API key belongs to no organization', {hint: 'create an org on targon.com or use another key'})
  // Several orgs: renting in the wrong one bills the wrong account, so never guess.
  const slugs = orgs.map((org) => org.slug).join(', ')
  throw new TargonError('CONFIG', `this API key can use several orgs (${slugs}); choose one`, {
    details: {orgs: orgs.map((org) => org.slug)},
    hint: `pass --org <slug>, export TARGON_ORG=<slug>, or run: targon config set org <slug>`,
  })
}

/**
 * An org the key does not list is a configuration error (exit 3), found here rather than as a 404 or 403 on
 * the first org-scoped call. It costs the same one listing as discovery; a key that may not list orgs is
 * given the benefit of the doubt.
 */
async function assertVisible(client: TargonClient, slug: string): Promise<void> {
  let orgs
  try {
    orgs = await client.listOrgs()
  } catch (error) {
    if (error instanceof TargonError && (error.httpStatus === 403 || error.httpStatus === 404)) return
    throw error
  }

  if (orgs.some((org) => org.slug === slug)) return
  const slugs = orgs.map((org) => org.slug)
  throw new TargonError('CONFIG', `org "${slug}" is unknown to this API key`, {
    details: {orgs: slugs},
    hint:
      slugs.length > 0
        ? `use one of: ${slugs.join(', ')} (--org, TARGON_ORG or targon config set org)`
        : 'check the org slug and the API key',
  })
}
