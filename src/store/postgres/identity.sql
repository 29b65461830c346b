-- The store's identity (random, fixed when first written) and epoch (see store/epoch.rs):
-- run at every read-write open, so a store created before they existed gets them too.
INSERT INTO meta (key, value)
    VALUES ('store_id', floor((random() - 0.5) * 18014398509481982)::bigint)
    ON CONFLICT (key) DO NOTHING;
INSERT INTO meta (key, value) VALUES ('store_epoch', 0) ON CONFLICT (key) DO NOTHING;
