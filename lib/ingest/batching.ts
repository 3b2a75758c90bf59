/**
 * Coalesces the items submitted during one turn of the event loop into one batch for `run`, and
 * answers each caller with its own result: under load, one site check, one visit script call and
 * one sink write serve many requests. For long-lived processes (Node); a Worker keeps each
 * request's I/O its own.
 */
export class Coalescer<Item, Result> {
  private queue: { item: Item; resolve: (result: Result) => void; reject: (err: unknown) => void }[] = []

  constructor(private readonly run: (items: Item[]) => Promise<Result[]>) {}

  submit(item: Item): Promise<Result> {
    return new Promise((resolve, reject) => {
      if (this.queue.push({ item, resolve, reject }) === 1) setImmediate(() => this.runQueued())
    })
  }

  private runQueued() {
    const batch = this.queue
    this.queue = []
    this.run(batch.map((q) => q.item)).then(
      (results) => batch.forEach((q, i) => q.resolve(results[i])),
      (err) => batch.forEach((q) => q.reject(err)),
    )
  }
}
