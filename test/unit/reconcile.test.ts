/**
 * The reconciler, the retry of one exchange and the back-off table, each branch on a fake clock: no test here waits
 * in real time.
 */
import {describe, expect, it} from 'vitest'

import {BACKOFF, jittered} from '../../src/lib/core/backoff.js'
import {type Look, MAX_SENDS, type Mutation, type Verdict, reconcile} from '../../src/lib/core/reconcile.js'
import {retry} from '../../src/lib/core/retry.js'
import {fakeClock} from '../helpers/fake-clock.js'

const lost = new Error('socket hang up')
const refusal = new Error('no capacity')
const broken = new Error('unauthorized')

/**
 * A mutation against a scripted server: each send takes the next of `answers` (a value, or an error classified by
 * `verdicts`); each look the next of `looks` (the last one repeats). It records when each send and look happened.
 */
function scripted(
  clock: ReturnType<typeof fakeClock>,
  answers: (Error | string)[],
  looks: Look<string>[] = ['watch'],
  extra: Partial<Mutation<string, string>> = {},
) {
  const sent: number[] = []
  const looked: number[] = []
  const verdicts = new Map<Error, Verdict>([
    [lost, 'unclear'],
    [refusal, 'refused'],
    [broken, 'fatal'],
  ])
  const mutation: Mutation<string, string> = {
    classify: (error) => verdicts.get(error as Error) ?? 'fatal',
    look: async () => {
      looked.push(clock.now())
      return looks.length > 1 ? (looks.shift() as Look<string>) : (looks[0] as Look<string>)
    },
    lookDelay: () => 1000,
    send: async () => {
      sent.push(clock.now())
      const answer = answers.shift()
      if (answer === undefined) throw new Error('sent more often than scripted')
      if (answer instanceof Error) throw answer
      return answer
    },
    watchMs: () => 3000,
    ...extra,
  }
  return {looked, mutation, sent}
}

describe('the reconciler', () => {
  it('takes a first answer as it is, without looking at the state', async () => {
    const clock = fakeClock()
    const {looked, mutation, sent} = scripted(clock, ['uid-1'])
    expect(await reconcile(mutation, {clock})).toEqual({kind: 'answered', sends: 1, value: 'uid-1'})
    expect(sent).toEqual([0])
    expect(looked).toEqual([])
  })

  it('returns a refusal and throws a fatal error, never sending either again', async () => {
    const clock = fakeClock()
    const refused = scripted(clock, [refusal])
    expect(await reconcile(refused.mutation, {clock})).toEqual({error: refusal, kind: 'refused', sends: 1})
    const fatal = scripted(clock, [broken])
    await expect(reconcile(fatal.mutation, {clock})).rejects.toBe(broken)
    expect([refused.sent.length, fatal.sent.length]).toEqual([1, 1])
  })

  it('after an unclear answer, takes what the state shows for the answer and sends nothing more', async () => {
    const clock = fakeClock()
    const {looked, mutation, sent} = scripted(clock, [lost], ['watch', {observed: 'uid-7'}])
    expect(await reconcile(mutation, {clock})).toEqual({kind: 'observed', sends: 1, state: 'uid-7'})
    expect(sent).toEqual([0])
    // Looked at once at once, then after one back-off step.
    expect(looked).toEqual([0, 1000])
  })

  it('sends again only once the state has shown nothing for the whole window, and tells before it does', async () => {
    const clock = fakeClock()
    const resends: number[] = []
    const {looked, mutation, sent} = scripted(clock, [lost, 'uid-2'], ['watch'], {onResend: (_error, sends) => resends.push(sends)})
    expect(await reconcile(mutation, {clock})).toEqual({kind: 'answered', sends: 2, value: 'uid-2'})
    expect(sent).toEqual([0, 3000])
    expect(looked).toEqual([0, 1000, 2000, 3000])
    expect(resends).toEqual([1])
  })

  it('sends again at once when a look says the state no longer moves', async () => {
    const clock = fakeClock()
    const {mutation, sent} = scripted(clock, [lost, 'done'], ['send-again'])
    expect(await reconcile(mutation, {clock})).toEqual({kind: 'answered', sends: 2, value: 'done'})
    expect(sent).toEqual([0, 0])
  })

  it(`gives up after ${MAX_SENDS} unclear sends with the last unclear answer, having looked after the last one too`, async () => {
    const clock = fakeClock()
    const answers = Array.from({length: MAX_SENDS}, () => lost)
    const unclear: number[] = []
    const {looked, mutation, sent} = scripted(clock, answers, ['watch'], {onUnclear: (_error, sends) => unclear.push(sends)})
    expect(await reconcile(mutation, {clock})).toEqual({error: lost, kind: 'unsettled', sends: MAX_SENDS, why: 'sends'})
    expect(sent).toEqual([0, 3000, 6000, 9000])
    expect(looked.at(-1)).toBe(12_000)
    expect(unclear).toEqual([1, 2, 3, 4])
  })

  it('watches for a window and a back-off that depend on the answer and the sends so far', async () => {
    const clock = fakeClock()
    const windows: number[] = []
    const {mutation, sent} = scripted(clock, [lost, lost, 'ok'], ['watch'], {
      lookDelay: BACKOFF.deployLook,
      watchMs: (_error, sends) => {
        windows.push(sends)
        return BACKOFF.deployLook(sends - 1)
      },
    })
    expect((await reconcile(mutation, {clock})).kind).toBe('answered')
    expect(windows).toEqual([1, 2])
    // 1 s after the first unclear send, 2 s after the second.
    expect(sent).toEqual([0, 1000, 3000])
    // Each window starts its looks over: 1 s; then 1 s, and a 2 s step cut to the window's end.
    expect(clock.sleeps).toEqual([1000, 1000, 1000])
  })

  it('stops at the deadline: the window is cut to it, and nothing is sent after it', async () => {
    const clock = fakeClock(10_000)
    const {looked, mutation, sent} = scripted(clock, [lost, lost], ['watch'], {watchMs: () => 60_000})
    expect(await reconcile(mutation, {clock, deadline: 12_500})).toEqual({error: lost, kind: 'unsettled', sends: 1, why: 'deadline'})
    expect(sent).toEqual([10_000])
    expect(looked).toEqual([10_000, 11_000, 12_000, 12_500])
  })

  it('looks first when asked: what is there already is never sent again', async () => {
    const clock = fakeClock()
    const there = scripted(clock, ['never'], [{observed: 'uid-old'}])
    expect(await reconcile(there.mutation, {clock, lookFirst: true})).toEqual({kind: 'observed', sends: 0, state: 'uid-old'})
    expect(there.sent).toEqual([])
    const absent = scripted(clock, ['uid-new'], ['watch'])
    expect(await reconcile(absent.mutation, {clock, lookFirst: true})).toEqual({kind: 'answered', sends: 1, value: 'uid-new'})
    expect(absent.looked).toHaveLength(1)
  })

  it('starts by watching an earlier unclear answer, counting the sends made before', async () => {
    const clock = fakeClock()
    const {looked, mutation, sent} = scripted(clock, [lost], ['watch'])
    expect(await reconcile(mutation, {clock, sent: 3, unclear: lost})).toEqual({error: lost, kind: 'unsettled', sends: 4, why: 'sends'})
    expect(sent).toEqual([3000])
    expect(looked[0]).toBe(0)
  })

  it('waits out trouble of a look that its rule calls passing, and throws any other', async () => {
    const clock = fakeClock()
    const busy = new Error('busy')
    let looks = 0
    const passing = scripted(clock, [lost], ['watch'], {
      look: async () => (++looks < 3 ? Promise.reject(busy) : {observed: 'uid-3'}),
      lookTrouble: (error) => (error === busy ? 1500 : undefined),
    })
    expect(await reconcile(passing.mutation, {clock})).toEqual({kind: 'observed', sends: 1, state: 'uid-3'})
    expect(clock.sleeps).toEqual([1500, 1500])
    const failing = scripted(clock, [lost], ['watch'], {look: async () => Promise.reject(broken)})
    await expect(reconcile(failing.mutation, {clock})).rejects.toBe(broken)
  })

  it('ends with the signal: nothing is sent once it aborted', async () => {
    const clock = fakeClock()
    const controller = new AbortController()
    const {mutation, sent} = scripted(clock, [lost, 'late'], ['watch'], {onUnclear: () => controller.abort(new Error('interrupted'))})
    await expect(reconcile(mutation, {clock, signal: controller.signal})).rejects.toThrow('interrupted')
    expect(sent).toEqual([0])
  })
})

describe('the retry of one exchange', () => {
  it('tries again after the delay its rule gives, and gives up with the last error when the rule says so', async () => {
    const clock = fakeClock()
    const attempts: number[] = []
    const flaky = new Error('502')
    const answer = await retry(
      async (attempt) => {
        attempts.push(clock.now())
        if (attempt < 3) throw flaky
        return 'ok'
      },
      {clock, delayAfter: (_error, attempt) => 100 * attempt},
    )
    expect(answer).toBe('ok')
    expect(attempts).toEqual([0, 100, 300])

    await expect(
      retry(
        async () => {
          throw flaky
        },
        {clock, delayAfter: (_error, attempt) => (attempt < 4 ? 10 : undefined)},
      ),
    ).rejects.toBe(flaky)
  })

  it('ends with the signal, between attempts as well as before the first', async () => {
    const clock = fakeClock()
    const controller = new AbortController()
    let attempts = 0
    const failing = retry(
      async () => {
        attempts++
        controller.abort(new Error('interrupted'))
        throw new Error('502')
      },
      {clock, delayAfter: () => 10, signal: controller.signal},
    )
    await expect(failing).rejects.toThrow('interrupted')
    expect(attempts).toBe(1)
  })
})

describe('the back-off table', () => {
  it('names each step: doubling ones stop at their cap, fixed ones stay', () => {
    expect([0, 1, 2, 3, 4, 9].map(BACKOFF.deployLook)).toEqual([1000, 2000, 4000, 8000, 8000, 8000])
    expect([0, 1, 4, 5].map(BACKOFF.keyLook)).toEqual([500, 1000, 8000, 8000])
    expect([0, 1, 3, 4].map(BACKOFF.deletionLook)).toEqual([250, 500, 2000, 3000])
    expect([0, 1, 3, 4].map(BACKOFF.stateRead)).toEqual([500, 1000, 4000, 5000])
    expect([0, 2, 8, 20].map(BACKOFF.wakeLook)).toEqual([1000, 2000, 5000, 5000])
    expect([0, 1, 2, 3, 9].map(BACKOFF.shimHealthLook)).toEqual([200, 400, 800, 1000, 1000])
    // By the time it has been followed: quick for 3 s, then once a second, whatever the count.
    expect([BACKOFF.bootstrapLook(0, 0), BACKOFF.bootstrapLook(11, 2999), BACKOFF.bootstrapLook(12, 3000)]).toEqual([250, 250, 1000])
    expect([BACKOFF.createLook(), BACKOFF.nameLook(), BACKOFF.projectLook()]).toEqual([2000, 2000, 1000])
    for (let sample = 0; sample < 50; sample++) {
      const lock = BACKOFF.lockLook()
      expect(lock).toBeGreaterThanOrEqual(50)
      expect(lock).toBeLessThanOrEqual(150)
    }
  })

  it('jitters a retry between half and one and a half of its doubled step', () => {
    expect(jittered(500, 0, 0)).toBe(250)
    expect(jittered(500, 0, 1)).toBe(750)
    expect(jittered(500, 2, 0.5)).toBe(2000)
  })
})
