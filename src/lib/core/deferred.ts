/** A promise with its settle functions, settled from outside; the first call settles it, later ones are ignored. */
export class Deferred<T> {
  readonly promise: Promise<T>
  resolve!: (value: T) => void
  reject!: (error: unknown) => void

  constructor() {
    this.promise = new Promise<T>((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
    // Nobody may be waiting for it when it fails (e.g. the address of a VM that errored before it had one).
    this.promise.catch(() => undefined)
  }
}
