import { type Fragment, sql } from '../../../storage/clickhouse/sql'

/**
 * The most frequent value of an expression within each group, ties to the smallest value, so
 * the answer is the same on every run (topK is approximate and breaks ties arbitrarily). Each row
 * is tallied as a one-entry map: the engine sums maps in about half the time it sums the same
 * counts given as a pair of one-element arrays.
 */
export function mostFrequent(expr: Fragment): Fragment {
  const tally = sql`sumMap(map(toString(${expr}), toUInt64(1)))`
  return sql`tupleElement(arrayElement(arraySort(x -> (-toInt64(tupleElement(x, 2)), tupleElement(x, 1)), arrayZip(mapKeys(${tally}), mapValues(${tally}))), 1), 1)`
}

/** The same over rows already counted: the value of the group's row with the greatest count, ties to the smallest value. */
export function mostFrequentCounted(value: Fragment, count: Fragment): Fragment {
  return sql`tupleElement(arrayElement(arraySort(x -> (-toInt64(tupleElement(x, 2)), tupleElement(x, 1)), groupArray((toString(${value}), ${count}))), 1), 1)`
}
