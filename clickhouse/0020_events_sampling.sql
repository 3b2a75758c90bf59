-- Events can be read from a sample of visitors (a site's samplingThreshold, lib/reports/query/sampling.ts):
-- `SAMPLE 1/n` keeps the rows whose visitor_id falls in the first n-th of its range. visitor_id is
-- already a hash (the first 8 bytes of SHA-256 of the day's salt, the site, the address and the
-- user agent), so it is spread evenly over UInt64 and serves as the sampling key as it is; it is
-- in the sorting key, as a sampling key must be, so the change is to the table's metadata alone:
-- no row is rewritten, and a read without SAMPLE reads every row as before.
ALTER TABLE events {{on_cluster}} MODIFY SAMPLE BY visitor_id;
