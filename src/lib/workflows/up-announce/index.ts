/** The public entry of the up-announce workflow: what commands may use of it (lint holds commands to it). */
export {ClaimsSoFar, upAndAnnounce} from './announce.js'
