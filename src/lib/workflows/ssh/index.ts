/** The public entry of the ssh workflows: what commands may use of them (lint holds commands to it). */
export {SshConfigResultSchema} from './schema.js'
export type {SshResult} from './schema.js'
export {runSsh} from './session.js'
export {sshConnection, sshHosts} from './ssh.js'
