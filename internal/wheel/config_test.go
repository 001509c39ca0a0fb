package wheel

import (
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   Config
		want Config
	}{
		{Config{}, Config{Tick: time.Millisecond, SlotsPerLevel: 256, Levels: 4}},
		{Config{Tick: time.Nanosecond}, Config{Tick: time.Nanosecond, SlotsPerLevel: 256, Levels: 7}},
		{Config{SlotsPerLevel: 4096}, Config{Tick: time.Millisecond, SlotsPerLevel: 4096, Levels: 3}},
		{Config{SlotsPerLevel: 64}, Config{Tick: time.Millisecond, SlotsPerLevel: 64, Levels: 6}},
		{Config{SlotsPerLevel: 2}, Config{Tick: time.Millisecond, SlotsPerLevel: 2, Levels: 32}},
		{Config{Tick: time.Hour}, Config{Tick: time.Hour, SlotsPerLevel: 256, Levels: 2}},
		{Config{Tick: 100 * 24 * time.Hour}, Config{Tick: 100 * 24 * time.Hour, SlotsPerLevel: 256, Levels: 1}},
		{Config{Levels: 2}, Config{Tick: time.Millisecond, SlotsPerLevel: 256, Levels: 2}},
	}
	for _, tc := range cases {
		got := tc.in
		got.ensureDefaults()
		if got != tc.want {
			t.Errorf("defaults of %+v = %+v, want %+v", tc.in, got, tc.want)
		}
		if err := got.validate(); err != nil {
			t.Errorf("defaults of %+v do not validate: %v", tc.in, err)
		}
		span := time.Duration(1<<(uint(got.Levels)*slotBits(got.SlotsPerLevel))) * got.Tick
		if tc.in.Levels == 0 && span < DefaultSpan && span > 0 {
			t.Errorf("defaults of %+v span %v, less than DefaultSpan", tc.in, span)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cfg  Config
		want string // substring of the error, "" for valid
	}{
		{Config{Tick: -time.Millisecond}, "Tick must be positive"},
		{Config{SlotsPerLevel: 3}, "SlotsPerLevel must be a power of two"},
		{Config{SlotsPerLevel: 1}, "SlotsPerLevel must be a power of two"},
		{Config{SlotsPerLevel: -4}, "SlotsPerLevel must be a power of two"},
		{Config{SlotsPerLevel: 8192}, "SlotsPerLevel must be a power of two"},
		{Config{Levels: -1}, "Levels must be between 1 and 7"},
		{Config{Levels: 8}, "Levels must be between 1 and 7"},
		{Config{SlotsPerLevel: 512, Levels: 7}, ""},
		{Config{SlotsPerLevel: 2, Levels: 63}, ""},
		{Config{SlotsPerLevel: 2, Levels: 64}, "Levels must be between 1 and 63"},
		{Config{SlotsPerLevel: 4096, Levels: 5}, ""},
		{Config{Tick: time.Nanosecond, SlotsPerLevel: 2, Levels: 1}, ""},
	}
	for _, tc := range cases {
		_, err := New[int](tc.cfg, epoch0)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("New(%+v): %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "wheel: ")):
			t.Errorf("New(%+v) error = %v, want one containing %q", tc.cfg, err, tc.want)
		}
	}
}
