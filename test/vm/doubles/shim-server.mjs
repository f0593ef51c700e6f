// The dstack-shim double: answers GET /api/healthcheck on 127.0.0.1:$DSTACK_SHIM_HTTP_PORT inside the
// simulated VM as dstack-shim does, lists the tasks a test gives it (GET /api/tasks, /api/tasks/{id}), and
// writes host_info.json in service mode.
import {readFileSync, writeFileSync} from 'node:fs'
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

function readTasks() {
  try {
    return JSON.parse(readFileSync('/run/vm/tasks.json', 'utf8'))
  } catch {
    return []
  }
}

createServer((request, response) => {
  if (unhealthy || Date.now() - started < healthyAfterMs) {
    response.statusCode = 503
    response.end('starting')
    return
  }

  // The shim's tasks, as the test sets them in /run/vm/tasks.json ([{"id": "t1", "status": "running"}]).
  const tasks = readTasks()
  if (request.url === '/api/tasks') {
    response.setHeader('content-type', 'application/json')
    response.end(JSON.stringify({ids: tasks.map((task) => task.id)}))
    return
  }

  const task = tasks.find((each) => request.url === `/api/tasks/${each.id}`)
  if (task) {
    response.setHeader('content-type', 'application/json')
    response.end(JSON.stringify({container_name: `dstack-${task.id}`, id: task.id, status: task.status, termination_reason: null}))
    return
  }

  if (request.url === '/api/healthcheck') {
    response.setHeader('content-type', 'application/json')
    response.end(JSON.stringify({service: 'dstack-shim', version}))
    return
  }

  response.statusCode = 404
  response.end()
}).listen(port, '127.0.0.1', () => console.log(`dstack-shim ${version} listening on 127.0.0.1:${port}`))
