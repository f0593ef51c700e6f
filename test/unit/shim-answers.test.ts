/**
 * What the tool reads from dstack's shim, checked against the shim's own source at 0.21.2 (dstackai/dstack
 * runner/internal/shim/api/schemas.go and handlers.go; runner/internal/common/api/api.go writes each answer with
 * json.NewEncoder, so with a final newline): the health check (read by up), the task list in both of its shapes and
 * each task (read by the idle sampler on the VM, in Python, and by the bootstrap before it restarts Docker).
 */
import {execFileSync} from 'node:child_process'
import {fileURLToPath} from 'node:url'
import {describe, expect, it} from 'vitest'

import {readHealthAnswer} from '../../src/lib/adapters/bootstrap/shim.js'

const SAMPLER = fileURLToPath(new URL('../../src/lib/adapters/bootstrap/idle-sampler.py', import.meta.url))

// HealthcheckResponse{Service, Version}.
const HEALTH = '{"service":"dstack-shim","version":"0.21.2"}\n'
// TaskListResponse{Tasks []*shim.TaskListItem} since 0.19.26; TaskListItem{ID, Status}.
const TASK_LIST = '{"tasks":[{"id":"5e2c1d9a-0b7f-4c1e-9a55-2f1f0c3b7d10","status":"pulling"},{"id":"old-1","status":"terminated"}]}\n'
const NO_TASKS = '{"tasks":[]}\n'
// TaskListResponse{IDs []string} up to 0.19.25.
const ID_LIST = '{"ids":["5e2c1d9a-0b7f-4c1e-9a55-2f1f0c3b7d10"]}\n'
// TaskInfoResponse at 0.21.2, as GET /api/tasks/{id} answers while the image is pulled.
const TASK_INFO = JSON.stringify({
  container_id: '',
  container_name: '',
  gpus_ids: null,
  id: '5e2c1d9a-0b7f-4c1e-9a55-2f1f0c3b7d10',
  image_pull_progress: {downloaded_bytes: 1024, extracted_bytes: 0, is_total_bytes_final: false, total_bytes: 0},
  ports: null,
  status: 'pulling',
  termination_message: '',
  termination_reason: '',
})

/**
 * The sampler's parse_task_list on each list answer, with `infos` as the answers of GET /api/tasks/{id} (absent: 404),
 * in one Python process.
 */
function parseTaskLists(cases: [list: string, infos?: Record<string, string>][]): [unknown, string | null][] {
  const script = [
    'import importlib.util, json, sys',
    'spec = importlib.util.spec_from_file_location("sampler", sys.argv[1])',
    'sampler = importlib.util.module_from_spec(spec)',
    'spec.loader.exec_module(sampler)',
    'def parsed(list_answer, infos):',
    '    def read_task(task_id):',
    '        if task_id not in infos:',
    '            raise OSError("HTTP 404")',
    '        return json.loads(infos[task_id])',
    '    return sampler.parse_task_list(json.loads(list_answer), read_task)',
    'print(json.dumps([parsed(list_answer, infos) for list_answer, infos in json.loads(sys.argv[2])]))',
  ].join('\n')
  const input = JSON.stringify(cases.map(([list, infos]) => [list, infos ?? {}]))
  return JSON.parse(execFileSync('python3', ['-c', script, SAMPLER, input], {encoding: 'utf8'}))
}

describe("the shim's answers, as dstack-shim 0.21.2 gives them", () => {
  it('the health check: the shim and its version, or why not', () => {
    expect(readHealthAnswer(200, HEALTH, '0.21.2')).toEqual({version: '0.21.2'})
    expect(readHealthAnswer(200, HEALTH, 'latest')).toEqual({version: '0.21.2'})
    expect(readHealthAnswer(200, HEALTH, '0.20.0')).toEqual({why: 'version 0.21.2, wanted 0.20.0'})
    expect(readHealthAnswer(200, '{"service":"other","version":"0.21.2"}', '0.21.2')).toEqual({why: 'not dstack-shim answering'})
    expect(readHealthAnswer(503, 'starting', '0.21.2')).toEqual({why: 'HTTP 503, not JSON'})
    expect(readHealthAnswer(200, '{"service":"dstack-shim","version":"\\u001b[2J"}', '0.21.2')).toEqual({
      why: 'version (not a version), wanted 0.21.2',
    })
  })

  it('the task list since 0.19.26: each task with its status', () => {
    expect(parseTaskLists([[TASK_LIST], [NO_TASKS], ['{"tasks":[{"id":"t1","status":"restarting"}]}']])).toEqual([
      [
        [
          {id: '5e2c1d9a-0b7f-4c1e-9a55-2f1f0c3b7d10', status: 'pulling'},
          {id: 'old-1', status: 'terminated'},
        ],
        null,
      ],
      [[], null],
      // A status the shim does not have is kept as unknown, which is busy.
      [[{id: 't1', status: 'unknown'}], null],
    ])
  })

  it('the task list before 0.19.26: ids, each task read on its own', () => {
    const id = '5e2c1d9a-0b7f-4c1e-9a55-2f1f0c3b7d10'
    expect(
      parseTaskLists([
        [ID_LIST, {[id]: TASK_INFO}],
        // Gone between the list and its read (404), or an answer about another task: not known to be terminated.
        [ID_LIST],
        [ID_LIST, {[id]: '{"id":"other","status":"terminated"}'}],
        ['{"ids":[]}'],
      ]),
    ).toEqual([
      [[{id, status: 'pulling'}], null],
      [[{id, status: 'unknown'}], null],
      [[{id, status: 'unknown'}], null],
      [[], null],
    ])
  })

  it('anything else is unknown, never "no tasks"', () => {
    const unknown: [string, string][] = [
      ['{"task_ids":["t1"]}', "the shim's task list has neither tasks nor ids"],
      ['{"tasks":null}', "the shim's task list has neither tasks nor ids"],
      ['[]', "the shim's task list has neither tasks nor ids"],
      ['{"tasks":[{"id":"t1"}]}', "a task in the shim's list has no readable id and status"],
      ['{"tasks":[{"id":"../../x","status":"running"}]}', "a task in the shim's list has no readable id and status"],
      ['{"ids":["t 1"]}', "a task id in the shim's list is not one"],
      [JSON.stringify({ids: Array.from({length: 65}, (_, index) => `t${index}`)}), 'the shim lists 65 task ids, more than 64 can be read'],
    ]
    expect(parseTaskLists(unknown.map(([answer]) => [answer]))).toEqual(unknown.map(([, why]) => [null, why]))
  })
})
