import { type Fragment, sql } from '../../../storage/clickhouse/sql'

/**
 * The counts of each value of an expression within each group, as a map from the value's text.
 * Each row is tallied as a one-entry map: the engine sums maps in about half the time it sums the
 * same counts given as a pair of one-element arrays. Tallies of parts of a group (its days) sum up
 * with sumMap into the group's.
 */
export const tally = (expr: Fragment): Fragment => sql`sumMap(map(toString(${expr}), toUInt64(1)))`

/** The value with the greatest count of a tally, ties to the smallest value. */
export const mostFrequentOfTally = (counts: Fragment): Fragment =>
  sql`tupleElement(arrayElement(arraySort(x -> (-toInt64(tupleElement(x, 2)), tupleElement(x, 1)), arrayZip(mapKeys(${counts}), mapValues(${counts}))), 1), 1)`

/**
 * The most frequent value of an expression within each group, ties to the smallest value, so
 * the answer is the same on every run (topK is approximate and breaks ties arbitrarily).
 */
export const mostFrequent = (expr: Fragment): Fragment => mostFrequentOfTally(tally(expr))

/** The same over rows already counted: the value of the group's row with the greatest count, ties to the smallest value. */
export function mostFrequentCounted(value: Fragment, count: Fragment): Fragment {
  return sql`tupleElement(arrayElement(arraySort(x -> (-toInt64(tupleElement(x, 2)), tupleElement(x, 1)), groupArray((toString(${value}), ${count}))), 1), 1)`
}
