-- Page paths as LowCardinality(String): a site has far fewer distinct paths than events, and a
-- filter on the path (contains, matches, is) then runs once per distinct path of a part rather
-- than once per event, and reading the column reads small dictionary keys. At ten million events
-- in a window a `path contains` filter cost most of a filtered read; on the dictionary it is a
-- small part of it. Paths with more distinct values than a dictionary holds still work: the
-- engine stores the extra values per granule. events_input keeps a plain String (its view
-- converts a whole column at a time, see 0004). The change rewrites the column of existing
-- parts in the background, as a mutation; reads are correct throughout.
ALTER TABLE events {{on_cluster}} MODIFY COLUMN pathname LowCardinality(String);
