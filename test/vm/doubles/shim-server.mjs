// The dstack-shim double, following dstack-shim 0.21.2 (dstackai/dstack runner/internal/shim/api: server.go,
// handlers.go, schemas.go; runner/internal/common/api/api.go for how answers are written): on
// 127.0.0.1:$DSTACK_SHIM_HTTP_PORT inside the simulated VM it answers GET /api/healthcheck, lists the tasks a test
// gives it (GET /api/tasks, GET /api/tasks/{id}), writes host_info.json in service mode, and at its start installs the
// runner from $DSTACK_RUNNER_DOWNLOAD_URL when $DSTACK_RUNNER_BINARY_PATH is missing (cmd/shim/main.go,
// components/runner.go), as a binary that reports the version of its URL.
// The task list has the shape of 0.19.26 and later, {"tasks": [{"id", "status"}]}; a test switches it to the shape
// of earlier shims, {"ids": [...]}, or to any answer at all (the farm's setTasks and setTaskListAnswer).
import {existsSync, readFileSync, writeFileSync} from 'node:fs'
import {createServer} from 'node:http'

const version = process.argv[2]
const scenario = readFileSync('/etc/sim-vm/scenario.env', 'utf8')
const unhealthy = /^SIM_SHIM_UNHEALTHY=1$/m.test(scenario)
// The latency model (test/vm/latency.ts): the shim answers only this long after its start.
const healthyAfterMs = Number(/^SIM_LATENCY_SHIM_HEALTHY=(.*)$/m.exec(scenario)?.[1] ?? 0) * 1000
const started = Date.now()
const home = process.env.DSTACK_SHIM_HOME ?? '/root/.dstack'
const port = Number(process.env.DSTACK_SHIM_HTTP_PORT ?? 10998)

if (process.env.DSTACK_SERVICE_MODE === '1') {
  writeFileSync(
    `${home}/host_info.json`,
    JSON.stringify({
      addresses: ['127.0.0.1'],
      cpus: 32,
      gpu_count: 1,
      gpu_memory: 97_887,
      gpu_name: 'RTX PRO 6000',
      gpu_vendor: 'nvidia',
      memory: 131_072,
    }),
  )
}

// The runner the shim downloads once (force=false: an existing binary is kept): `dstack-runner --version` prints
// "dstack-runner version <v>". "latest" is the version the curl double serves for it.
const runnerUrl = process.env.DSTACK_RUNNER_DOWNLOAD_URL ?? ''
const runnerPath = process.env.DSTACK_RUNNER_BINARY_PATH ?? '/usr/local/bin/dstack-runner'
const runnerVersion = /\/([^/]+)\/binaries\/dstack-runner-linux-[a-z0-9]+$/.exec(runnerUrl)?.[1]
if (runnerVersion && !existsSync(runnerPath)) {
  const shown = runnerVersion === 'latest' ? '0.21.9' : runnerVersion
  writeFileSync(runnerPath, `#!/bin/sh\n[ "$1" = --version ] && echo "dstack-runner version ${shown}"\n`, {mode: 0o755})
}

function readTasks() {
  try {
    return JSON.parse(readFileSync('/run/vm/tasks.json', 'utf8'))
  } catch {
    return []
  }
}

function readOptional(path) {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}

// As the shim writes a body: JSON with a final newline (json.NewEncoder), or Go's http.Error text on an error.
function answer(response, status, body) {
  response.statusCode = status
  if (typeof body === 'string') {
    response.setHeader('content-type', 'text/plain; charset=utf-8')
    response.end(`${body}\n`)
    return
  }
  response.setHeader('content-type', 'application/json')
  response.end(`${JSON.stringify(body)}\n`)
}

// TaskInfoResponse (schemas.go): the fields the server reads, then those for debugging.
function taskInfo(task) {
  return {
    container_id: task.status === 'pending' ? '' : `c0ffee${task.id.replaceAll('-', '')}`.slice(0, 64),
    container_name: `dstack-${task.id}`,
    gpus_ids: null,
    id: task.id,
    image_pull_progress:
      task.status === 'pulling' ? {downloaded_bytes: 1_048_576, extracted_bytes: 0, is_total_bytes_final: false, total_bytes: 0} : null,
    ports: null,
    status: task.status,
    termination_message: '',
    termination_reason: '',
  }
}

createServer((request, response) => {
  if (unhealthy || Date.now() - started < healthyAfterMs) {
    response.statusCode = 503
    response.end('starting')
    return
  }

  // The shim's tasks, as the test sets them in /run/vm/tasks.json ([{"id": "t1", "status": "running"}]), listed in
  // the shape named by /run/vm/tasks-shape (tasks, the default; ids), or answered as /run/vm/tasks-answer holds.
  const tasks = readTasks()
  if (request.method === 'GET' && request.url === '/api/tasks') {
    const raw = readOptional('/run/vm/tasks-answer')
    if (raw !== undefined) {
      response.setHeader('content-type', 'application/json')
      response.end(raw)
      return
    }

    const shape = readOptional('/run/vm/tasks-shape')?.trim() ?? 'tasks'
    answer(response, 200, shape === 'ids' ? {ids: tasks.map((task) => task.id)} : {tasks: tasks.map(({id, status}) => ({id, status}))})
    return
  }

  if (request.method === 'GET' && request.url?.startsWith('/api/tasks/')) {
    const task = tasks.find((each) => request.url === `/api/tasks/${each.id}`)
    if (task) answer(response, 200, taskInfo(task))
    else answer(response, 404, 'Not Found')
    return
  }

  if (request.method === 'GET' && request.url === '/api/healthcheck') {
    answer(response, 200, {service: 'dstack-shim', version})
    return
  }

  answer(response, 404, '404 page not found')
}).listen(port, '127.0.0.1', () => console.log(`dstack-shim ${version} listening on 127.0.0.1:${port}`))
