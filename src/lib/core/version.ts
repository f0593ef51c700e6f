import packageJson from '../../../package.json' with {type: 'json'}

/** The package version (the bundler inlines it; from source it is read from package.json). */
export const VERSION: string = packageJson.version

/** What package.json may say about where to report a bug (npm's `bugs`, else its `repository`). */
interface PackageLinks {
  version: string
  bugs?: string | {url?: string}
  repository?: string | {url?: string}
}

const links: PackageLinks = packageJson
const linkUrl = (link: PackageLinks['bugs']) => (typeof link === 'string' ? link : link?.url)?.replace(/^git\+|\.git$/g, '')

/** Where a bug of this tool is reported, when package.json says; undefined otherwise. */
export const BUGS_URL: string | undefined = linkUrl(links.bugs) ?? linkUrl(links.repository)
