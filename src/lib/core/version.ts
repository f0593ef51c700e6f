import packageJson from '../../../package.json' with {type: 'json'}

/** The package version (the bundler inlines it; from source it is read from package.json). */
export const VERSION: string = packageJson.version
