-- An insert of events can fail part-way: the engine writes `events` and some of the views fed from
-- it, then runs out of disk while writing another. The flush retries the same rows under the same
-- insert_deduplication_token (lib/ingest/sink.ts): each table keeps a log of the last blocks it
-- took, so the retry stores only what is missing and nothing twice. Replicated tables keep such a
-- log by default (replicated_deduplication_window); plain MergeTree tables keep none unless told.
-- Every insert carries a token of its own, so equal rows sent twice are never taken for a retry.
ALTER TABLE events {{on_cluster}} MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE bot_events {{on_cluster}} MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE sessions {{on_cluster}} MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE event_quarters {{on_cluster}} MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE visit_pages {{on_cluster}} MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE visit_quarters {{on_cluster}} MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE recent_events {{on_cluster}} MODIFY SETTING non_replicated_deduplication_window = 1000;
