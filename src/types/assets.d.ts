/** Shell scripts are imported as text: the bundle carries them (esbuild's text loader). */
declare module '*.sh' {
  const text: string
  export default text
}

/** The idle sampler's source, put into the bootstrap script. */
declare module '*.py' {
  const text: string
  export default text
}
