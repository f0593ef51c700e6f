/** Shell scripts are imported as text: the bundle carries them (esbuild's text loader). */
declare module '*.sh' {
  const text: string
  export default text
}
