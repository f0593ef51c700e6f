/**
 * The entry of the bundle (dist/cli.cjs): oclif's runner, the command table that package.json
 * names (oclif.commands, strategy explicit), and the --json contract for `npm run schemas`.
 * One bundle instead of hundreds of modules is what keeps start-up close to Node's own.
 */
import ConfigGet from './commands/config/get.js'
import ConfigList from './commands/config/list.js'
import ConfigRemove from './commands/config/remove.js'
import ConfigSet from './commands/config/set.js'
import ConfigUnset from './commands/config/unset.js'
import ConfigUse from './commands/config/use.js'
import Cost from './commands/cost.js'
import Cp from './commands/cp.js'
import Credits from './commands/credits.js'
import Down from './commands/down.js'
import DstackScale from './commands/dstack/scale.js'
import DstackSync from './commands/dstack/sync.js'
import Exec from './commands/exec.js'
import Extend from './commands/extend.js'
import GuardInstall from './commands/guard/install.js'
import GuardPrint from './commands/guard/print.js'
import GuardStatus from './commands/guard/status.js'
import GuardUninstall from './commands/guard/uninstall.js'
import Jobs from './commands/jobs/list.js'
import JobsCancel from './commands/jobs/cancel.js'
import JobsFetch from './commands/jobs/fetch.js'
import JobsLogs from './commands/jobs/logs.js'
import JobsWait from './commands/jobs/wait.js'
import Logs from './commands/logs.js'
import Offers from './commands/offers.js'
import Run from './commands/run.js'
import Ssh from './commands/ssh.js'
import Status from './commands/status.js'
import Sweep from './commands/sweep.js'
import Up from './commands/up.js'
import Version from './commands/version.js'

export {execute} from '@oclif/core'
export {jsonSchemas} from './lib/cli/contract.js'
export {commandNotFound} from './lib/cli/not-found.js'

export const COMMANDS = {
  'config:get': ConfigGet,
  'config:list': ConfigList,
  'config:remove': ConfigRemove,
  'config:set': ConfigSet,
  'config:unset': ConfigUnset,
  'config:use': ConfigUse,
  cost: Cost,
  cp: Cp,
  credits: Credits,
  down: Down,
  'dstack:scale': DstackScale,
  'dstack:sync': DstackSync,
  exec: Exec,
  extend: Extend,
  'guard:install': GuardInstall,
  'guard:print': GuardPrint,
  'guard:status': GuardStatus,
  'guard:uninstall': GuardUninstall,
  jobs: Jobs,
  'jobs:cancel': JobsCancel,
  'jobs:fetch': JobsFetch,
  'jobs:logs': JobsLogs,
  'jobs:wait': JobsWait,
  logs: Logs,
  offers: Offers,
  run: Run,
  ssh: Ssh,
  status: Status,
  sweep: Sweep,
  up: Up,
  version: Version,
}
export {completionPostrun} from './lib/cli/completion.js'
