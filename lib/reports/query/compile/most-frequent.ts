import { type Fragment, sql } from '../../../storage/clickhouse/sql'

/**
 * The most frequent value of an expression within each group, ties to the smallest value, so
 * the answer is the same on every run (topK is approximate and breaks ties arbitrarily).
 */
export function mostFrequent(expr: Fragment): Fragment {
  const tally = sql`sumMap([toString(${expr})], [toUInt64(1)])`
  return sql`tupleElement(arrayElement(arraySort(x -> (-toInt64(tupleElement(x, 2)), tupleElement(x, 1)), arrayZip(tupleElement(${tally}, 1), tupleElement(${tally}, 2))), 1), 1)`
}

/** The same over rows already counted: the value of the group's row with the greatest count, ties to the smallest value. */
export function mostFrequentCounted(value: Fragment, count: Fragment): Fragment {
  return sql`tupleElement(arrayElement(arraySort(x -> (-toInt64(tupleElement(x, 2)), tupleElement(x, 1)), groupArray((toString(${value}), ${count}))), 1), 1)`
}
