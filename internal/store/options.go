package store

import (
	"fmt"
	"log/slog"
	"time"
)

// DefaultCacheBytes is the block cache size when Options.CacheBytes is 0.
const DefaultCacheBytes = 64 << 20

// Options configures a Store. The zero value is ready to use.
type Options struct {
	// CacheBytes is the size of Pebble's block cache, which holds
	// uncompressed sstable blocks. Default 64 MiB. The memtables (64 MiB
	// each, two at most of the time) come on top of it.
	CacheBytes int64

	// Logger receives Pebble's event log (flushes, compactions, WAL
	// recycling) at Debug and its errors (background errors, data
	// corruption, write stalls turning fatal) at Error. Default: silent.
	Logger *slog.Logger

	// FS, if set, holds the store instead of the real disk: for tests of
	// power loss and disk failure.
	FS *MemFS

	// Shards is the number of shards of a store created now, a power of
	// two up to MaxShards; an existing store keeps its own, and refuses a
	// different one. Default (0): DefaultShards, or the store's.
	Shards int

	// memTableBytes is the size of a full memtable: memTableBytes unless
	// a test sets it.
	memTableBytes int64
	// pinOverlap is how long the pinner holds a read state after it
	// pinned a newer one: pinOverlap unless a test sets it.
	pinOverlap time.Duration
	// manualCompactions leaves compactions to a test's calls.
	manualCompactions bool
}

func (o *Options) validate() error {
	if o.Shards < 0 || o.Shards > MaxShards || o.Shards&(o.Shards-1) != 0 {
		return fmt.Errorf("store: Options.Shards must be a power of two up to %d, got %d", MaxShards, o.Shards)
	}
	return nil
}

func (o *Options) ensureDefaults() {
	if o.CacheBytes <= 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	if o.memTableBytes <= 0 {
		o.memTableBytes = memTableBytes
	}
	if o.pinOverlap <= 0 {
		o.pinOverlap = pinOverlap
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}
