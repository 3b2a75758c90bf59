-- An older tracker sent the value of a clicked form field (what a person typed: an e-mail address,
-- a password) as the click's text, and the text of contenteditable regions. A click's text is now
-- only the label of a button or link: clear every stored click text that is not one. Mutations run
-- in the background unless asked to wait: these wait until every part is rewritten.
ALTER TABLE events {{on_cluster}} UPDATE element_text = '' WHERE element_text != '' AND element_tag NOT IN ('a', 'button') SETTINGS mutations_sync = 2;
ALTER TABLE recent_events {{on_cluster}} UPDATE element_text = '' WHERE element_text != '' AND element_tag NOT IN ('a', 'button') SETTINGS mutations_sync = 2;
