/**
 * What a dstack server runs on an SSH fleet host when it takes the host over, as dstack 0.21.2 does it
 * (src/dstack/_internal/server/background/pipeline_tasks/instances/ssh_deploy.py `_deploy_instance`;
 * server/services/ssh_fleets/provisioning.py; core/backends/base/compute.py `get_shim_env`,
 * `get_shim_pre_start_commands`): one shell script for the login user, run over SSH on a simulated VM (targon exec),
 * the doubles (curl, systemctl) playing the downloads and the unit. `tagged` plays the commit after 0.21.2 that tags
 * each key it adds "# added by dstack" (`add_authorized_keys`).
 */
import {shellQuote} from '../../src/lib/adapters/ssh/session.js'

export interface DstackDeploy {
  /** The server's version: the shim it downloads and the runner its shim.env names. */
  version: string
  /** The fleet's `env:` entries, merged into shim.env. */
  env?: Record<string, string>
  /** The public keys it adds: the fleet's identity and the project's ("<project>@dstack"). */
  keys?: string[]
  tagged?: boolean
}

const BUCKET = 'https://dstack-runner-downloads.s3.eu-west-1.amazonaws.com'

/** shim.env as upload_envs writes it: get_shim_env(), the fleet's env:, DSTACK_SERVICE_MODE; no final newline. */
export function dstackShimEnv(version: string, env: Record<string, string> = {}): string {
  const envs: Record<string, string> = {
    DSTACK_SHIM_HOME: '/root/.dstack',
    DSTACK_SHIM_HTTP_PORT: '10998',
    DSTACK_SHIM_LOG_LEVEL: '5',
    DSTACK_RUNNER_DOWNLOAD_URL: `${BUCKET}/${version}/binaries/dstack-runner-linux-amd64`,
    DSTACK_RUNNER_BINARY_PATH: '/usr/local/bin/dstack-runner',
    DSTACK_RUNNER_HTTP_PORT: '10999',
    DSTACK_RUNNER_SSH_PORT: '10022',
    DSTACK_RUNNER_LOG_LEVEL: '5',
    ...env,
  }
  envs.DSTACK_SERVICE_MODE = '1'
  return Object.entries(envs)
    .map(([key, value]) => `${key}="${value.trim()}"`)
    .join('\n')
}

/** The unit run_shim_as_systemd_service writes (DSTACK_SHIM_RESTART_INTERVAL_SECONDS = 3). */
const UNIT = `[Unit]
Description=dstack-shim
After=network-online.target
StartLimitIntervalSec=3600
StartLimitBurst=1080

[Service]
Type=simple
User=root
Restart=always
RestartSec=3
WorkingDirectory=/root/.dstack
EnvironmentFile=/root/.dstack/shim.env
ExecStart=/usr/local/bin/dstack-shim

[Install]
WantedBy=multi-user.target
`

export function dstackDeployScript(deploy: DstackDeploy): string {
  const keys = deploy.keys ?? []
  const addKeys = deploy.tagged
    ? keys.map((key) => {
        const [type, blob, ...comment] = key.split(/\s+/)
        const line = `${type} ${blob} ${[...comment, '# added by dstack'].join(' ')}`
        return `grep -qF ${shellQuote(blob ?? '')} ~/.ssh/authorized_keys || echo ${shellQuote(line)} >> ~/.ssh/authorized_keys`
      })
    : keys.length > 0
      ? [`echo ${shellQuote(`\n${keys.join('\n').trim()}`)} >> ~/.ssh/authorized_keys`]
      : []
  const url = `${BUCKET}/${deploy.version}/binaries/dstack-shim-linux-amd64`
  const preStart = [
    'dlpath=$(sudo mktemp -t dstack-shim.XXXXXXXXXX)',
    `sudo curl -sS --compressed --connect-timeout 60 --max-time 240 --retry 1 --output "$dlpath" "${url}"`,
    'sudo mv "$dlpath" /usr/local/bin/dstack-shim',
    'sudo chmod +x /usr/local/bin/dstack-shim',
    '{ sudo chcon system_u:object_r:bin_t:s0 /usr/local/bin/dstack-shim 2>/dev/null || true; }',
    'sudo mkdir /root/.dstack -p',
  ].join(' && ')
  return [
    'set -e',
    ...addKeys,
    `sudo sh -c ${shellQuote(preStart)}`,
    `printf '%s' ${shellQuote(dstackShimEnv(deploy.version, deploy.env))} > /tmp/shim.env`,
    'sudo mkdir -p /root/.dstack && sudo mv /tmp/shim.env /root/.dstack/shim.env',
    'sudo test -e /root/.dstack/host_info.json && sudo rm /root/.dstack/host_info.json || true',
    'sudo test -e /usr/local/bin/dstack-runner && sudo rm /usr/local/bin/dstack-runner || true',
    `printf '%s' ${shellQuote(UNIT)} > /tmp/dstack-shim.service`,
    'sudo mv /tmp/dstack-shim.service /etc/systemd/system/dstack-shim.service',
    'sudo systemctl daemon-reload && sudo systemctl --quiet enable dstack-shim && sudo systemctl restart dstack-shim',
  ].join('\n')
}

/** A project's public key as dstack 0.21.2 makes it (generate_rsa_key_pair_bytes(f"{project_name}@dstack")). */
export const PROJECT_KEY = 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDsimulatedprojectkey main@dstack'
