/** Memoizes a pure function of a string, within a bound: user agents and referrers repeat a lot. */
export function memo<T>(fn: (key: string) => T, size = 5000) {
  const cache = new Map<string, T>()
  return (key: string) => {
    let value = cache.get(key)
    if (value === undefined) {
      if (cache.size >= size) cache.clear()
      value = fn(key)
      cache.set(key, value)
    }
    return value
  }
}
