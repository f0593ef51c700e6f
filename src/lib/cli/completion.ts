/**
 * oclif's postrun hook, for shell completion. plugin-autocomplete's bash script offers a topic once per command in
 * it when topics are separated by spaces (`targon <TAB>` listed config four times: config get, list, set, unset).
 * After it writes that script, a wrapper is appended that drops repeated words and takes over the completion.
 */
import {appendFileSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import type {Hook} from '@oclif/core'

const MARK = '# targon: each completion once'

export const completionPostrun: Hook<'postrun'> = async function ({Command, config}) {
  if (Command?.id !== 'autocomplete' && Command?.id !== 'autocomplete:create') return
  const file = join(config.cacheDir, 'autocomplete', 'functions', 'bash', `${config.bin}.bash`)
  let script: string
  try {
    script = readFileSync(file, 'utf8')
  } catch {
    return
  }

  if (script.includes(MARK)) return
  const original = `_${config.bin}_autocomplete`
  appendFileSync(
    file,
    `
${MARK}
${original}_once() {
  ${original} "$@"
  local -A seen=()
  local word unique=()
  for word in "\${COMPREPLY[@]}"; do
    [[ -n "\${seen[$word]}" ]] || { seen[$word]=1; unique+=("$word"); }
  done
  COMPREPLY=("\${unique[@]}")
}
complete -F ${original}_once ${config.bin}
`,
  )
}
