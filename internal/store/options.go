package store

import "log/slog"

// DefaultCacheBytes is the block cache size when Options.CacheBytes is 0.
const DefaultCacheBytes = 64 << 20

// Options configures a Store. The zero value is ready to use.
type Options struct {
	// CacheBytes is the size of Pebble's block cache, which holds
	// uncompressed sstable blocks. Default 64 MiB.
	CacheBytes int64

	// Logger receives Pebble's event log (flushes, compactions, WAL
	// recycling) at Debug and its errors (background errors, data
	// corruption, write stalls turning fatal) at Error. Default: silent.
	Logger *slog.Logger

	// FS, if set, holds the store instead of the real disk: for tests of
	// power loss and disk failure.
	FS *MemFS
}

func (o *Options) ensureDefaults() {
	if o.CacheBytes <= 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}
