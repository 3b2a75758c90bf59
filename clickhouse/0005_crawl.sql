-- What the crawler saw: one row per fetch of a page (lib/crawl). A page's latest snapshot is its
-- row with the greatest fetched_at; status 0 is a fetch that failed (error says why), which
-- change detection skips. main_text is the readable text (Readability), empty for non-HTML.
-- launched_at is the page's launch date: the earlier of its first fetch and its first pageview,
-- carried from each snapshot to the next.
CREATE TABLE IF NOT EXISTS crawl_snapshots {{on_cluster}} (
  site_id UUID,
  path String,
  fetched_at DateTime64(3, 'UTC'),
  id UUID,
  status UInt16,
  final_url String,
  content_type LowCardinality(String),
  bytes UInt32,
  title String,
  meta_description String,
  canonical String,
  robots_meta String,
  h1 String,
  main_text String CODEC(ZSTD(3)),
  word_count UInt32,
  content_hash String,
  links Array(String),
  in_sitemap UInt8,
  removed UInt8,
  error String,
  launched_at DateTime64(3, 'UTC')
)
ENGINE = {{replicated}}MergeTree
PARTITION BY toYYYYMM(fetched_at)
ORDER BY (site_id, path, fetched_at);

-- Detected changes: a page's snapshot compared with its previous one (scope 'page'), or one
-- change of the whole site (scope 'site': robots.txt, the sitemap, or one kind of change on most
-- pages at once, with the number of pages in `pages`). before_snapshot and after_snapshot point
-- at the snapshots compared (the zero UUID when there is none); the word diff reads them.
CREATE TABLE IF NOT EXISTS crawl_changes {{on_cluster}} (
  site_id UUID,
  detected_at DateTime64(3, 'UTC'),
  id UUID,
  scope LowCardinality(String),
  path String,
  type LowCardinality(String),
  category LowCardinality(String),
  before String,
  after String,
  words_added UInt32,
  words_removed UInt32,
  diffable UInt8,
  pages UInt32,
  sample_paths Array(String),
  before_snapshot UUID,
  after_snapshot UUID
)
ENGINE = {{replicated}}MergeTree
PARTITION BY toYYYYMM(detected_at)
ORDER BY (site_id, detected_at, id);
