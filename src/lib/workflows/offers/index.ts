/** The public entry of the offers workflows: what commands may use of them (lint holds commands to it). */
export type {OffersResult} from './schema.js'
