/** Which organization a command acts on: --org, then TARGON_ORG, then config, then discovery. */
import {TargonError} from '../../core/errors.js'
import type {TargonClient} from './client.js'
import type {SettingsResolver} from '../settings/resolve.js'

export async function resolveOrg(client: TargonClient, settings: SettingsResolver, fromFlag: string | undefined): Promise<string> {
  const explicit = await settings.get('org', fromFlag)
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
 * An explicit org is checked by asking for it (GET /orgs/{slug}), as Targon's own CLI does: the listing of /orgs
 * holds only the orgs the key belongs to, and an org-scoped service token may belong to none. 404: the org does not
 * exist (CONFIG); 403: this key may not use it (AUTH). Found here rather than on the first org-scoped call.
 */
async function assertVisible(client: TargonClient, slug: string): Promise<void> {
  try {
    await client.getOrg(slug)
  } catch (error) {
    if (!(error instanceof TargonError)) throw error
    if (error.httpStatus === 403)
      throw new TargonError('AUTH', `this API key may not use org "${slug}"`, {
        hint: 'use a key of that org, or another org (--org, TARGON_ORG or targon config set org)',
        httpStatus: 403,
        requestId: error.requestId,
      })
    if (error.httpStatus !== 404) throw error
    // The orgs the key belongs to, for the hint only: a key may list none.
    const slugs = (await client.listOrgs().catch(() => [])).map((org) => org.slug)
    throw new TargonError('CONFIG', `org "${slug}" does not exist`, {
      details: {orgs: slugs},
      hint:
        slugs.length > 0
          ? `use one of: ${slugs.join(', ')} (--org, TARGON_ORG or targon config set org)`
          : 'check the org slug and the API key',
    })
  }
}
