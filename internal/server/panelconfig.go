package server

import (
	"fmt"
	"strings"
	"time"
)

// Defaults and bounds of PanelConfig.
const (
	DefaultUIPath             = "/ui/"
	DefaultMinRefresh         = 2 * time.Second
	DefaultCompletedWindow    = time.Hour
	MaxCompletedWindow        = 24 * time.Hour
	DefaultCompletedMax       = 10_000
	MaxCompletedMax           = 1_000_000
	DefaultStatsInterval      = 10 * time.Second
	DefaultStatsRetention     = 24 * time.Hour
	MaxStatsSamples           = 100_000
	DefaultAuditEntries       = 10_000
	MaxAuditEntries           = 1_000_000
	DefaultPayloadSearchBytes = 64 << 10
)

// PanelConfig configures the web panel and the recent history the server
// keeps for it in memory. Zero fields take the defaults above.
type PanelConfig struct {
	// UIPath is the path the panel is served under on the HTTP port,
	// starting and ending with "/". Default "/ui/". Behind a reverse
	// proxy that strips a prefix, the proxy's X-Forwarded-Prefix header
	// is put in front of it in the panel's links.
	UIPath string
	// NoUI serves no panel; the API it uses stays.
	NoUI bool
	// MinRefresh is the shortest auto-refresh interval the panel offers.
	// Default 2 s.
	MinRefresh time.Duration
	// CompletedWindow is how long finished occurrences and their attempts
	// stay listed (ListCompleted, GetTaskAttempts), and CompletedMax how
	// many at most, oldest dropped first; CompletedMax also bounds the
	// tasks whose attempts are remembered while they go on. Defaults 1 h
	// (at most 24 h) and 10,000 (at most 1,000,000).
	CompletedWindow time.Duration
	CompletedMax    int
	// StatsInterval is how often the counters are sampled for GetStats,
	// and StatsRetention how long samples are kept. Defaults 10 s and
	// 24 h; at most 100,000 samples.
	StatsInterval  time.Duration
	StatsRetention time.Duration
	// AuditEntries is how many operator actions the audit log keeps.
	// Default 10,000.
	AuditEntries int
	// PayloadSearchBytes is how much of each payload a payload search
	// reads. Default 64 KiB.
	PayloadSearchBytes int
}

func (c *PanelConfig) ensureDefaults() {
	if c.UIPath == "" {
		c.UIPath = DefaultUIPath
	}
	if c.MinRefresh == 0 {
		c.MinRefresh = DefaultMinRefresh
	}
	if c.CompletedWindow == 0 {
		c.CompletedWindow = DefaultCompletedWindow
	}
	if c.CompletedMax == 0 {
		c.CompletedMax = DefaultCompletedMax
	}
	if c.StatsInterval == 0 {
		c.StatsInterval = DefaultStatsInterval
	}
	if c.StatsRetention == 0 {
		c.StatsRetention = DefaultStatsRetention
	}
	if c.AuditEntries == 0 {
		c.AuditEntries = DefaultAuditEntries
	}
	if c.PayloadSearchBytes == 0 {
		c.PayloadSearchBytes = DefaultPayloadSearchBytes
	}
}

func (c *PanelConfig) validate() error {
	switch {
	case !strings.HasPrefix(c.UIPath, "/") || !strings.HasSuffix(c.UIPath, "/") || c.UIPath == "/" ||
		strings.ContainsAny(c.UIPath, " {}\"'<>\\?#"):
		return fmt.Errorf("server: Panel.UIPath must start and end with / and name a path below the root, got %q", c.UIPath)
	case c.MinRefresh < 0:
		return fmt.Errorf("server: Panel.MinRefresh must not be negative, got %v", c.MinRefresh)
	case c.CompletedWindow < 0 || c.CompletedWindow > MaxCompletedWindow:
		return fmt.Errorf("server: Panel.CompletedWindow must be between 0 and %v, got %v", MaxCompletedWindow, c.CompletedWindow)
	case c.CompletedMax < 0 || c.CompletedMax > MaxCompletedMax:
		return fmt.Errorf("server: Panel.CompletedMax must be between 0 and %d, got %d", MaxCompletedMax, c.CompletedMax)
	case c.StatsInterval < 0 || c.StatsRetention < 0:
		return fmt.Errorf("server: Panel.StatsInterval and StatsRetention must not be negative")
	case c.StatsRetention/c.StatsInterval > MaxStatsSamples:
		return fmt.Errorf("server: Panel.StatsRetention / StatsInterval must be at most %d samples, got %d",
			MaxStatsSamples, c.StatsRetention/c.StatsInterval)
	case c.AuditEntries < 0 || c.AuditEntries > MaxAuditEntries:
		return fmt.Errorf("server: Panel.AuditEntries must be between 0 and %d, got %d", MaxAuditEntries, c.AuditEntries)
	case c.PayloadSearchBytes < 0:
		return fmt.Errorf("server: Panel.PayloadSearchBytes must not be negative, got %d", c.PayloadSearchBytes)
	}
	return nil
}
