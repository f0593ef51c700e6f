/** The public entry of the down-request workflows: what commands may use of them (lint holds commands to it). */
export {prepareDown, runDownRequest} from './request.js'
